"""TrainFail/AdmissionBackwardOOM-v2: the grader's oracle against hand-computed prices, the judge's
checks attacked one at a time with hand-made results, and the pinned peaks against the shipped rank
(fast: the judge runs no model, so no sandbox and no torch); the reference planner against the
oracle, re-measured peaks, and the judge's checks that issue 20's attacks got through (slow: the
case runtime, bubblewrap sandboxes). The full admission gate is the case's admission record
(``envs/<case>/admission.json``), checked and re-derived by rotation in
``tests/test_case_rotation.py``."""

from __future__ import annotations

import functools
import importlib.util
import json
import math
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from gym_trainfail.runtimes import Runtime

ROOT = Path(__file__).resolve().parents[1]
CASE_DIR = ROOT / "envs" / "admission_backward_oom"
CASE_ID = "TrainFail/AdmissionBackwardOOM-v2"
WRONG_REPAIRS = {
    "sum-not-max",
    "safety-factor-twice",
    "per-request-union",
    "charge-unprojected-ignored",
    "constant-margin",
    "charge-unsupported",
    "labelled-rows-only",
    "upper-bound-only",
    "upper-bound-past-50k-rows",
    "first-chunk-only",
}


def _load(name: str, path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


sys.path[:0] = [str(ROOT / "gym_trainfail" / "harnesslib"), str(CASE_DIR / "grader" / "kit"), str(CASE_DIR / "grader")]
oracle = _load("oracle", CASE_DIR / "grader" / "oracle.py")
kit = _load("scenario", CASE_DIR / "grader" / "kit" / "scenario.py")
measure = _load("measure", CASE_DIR / "grader" / "measure.py")
judge = _load("admission_case_judge", CASE_DIR / "grader" / "judge.py")

#: vocab 1000 -> padded 1024; hidden 8; 2 layers; ffn 16
SMALL = {"vocab_size": 1000, "hidden_size": 8, "num_layers": 2, "num_heads": 2, "ffn_hidden_size": 16}
SMALL_GRADS = (1000 * 8 + 2 * (2 * 8 + 4 * 8 * 8 + 3 * 16 * 8) + 8) * 2  # head weight excluded (main_grad)


def req(
    n: int,
    labels: list[int] | None = None,
    logits: list[int] | None = None,
    topk_positions: list[int] | None = None,
    topk: int = 0,
) -> dict[str, Any]:
    out: dict[str, Any] = {"tokens": [1] * n}
    if labels is not None:
        out["labels"] = labels
    if logits is not None:
        out["logits"] = logits
    if topk_positions is not None:
        out["topk_positions"], out["topk"] = topk_positions, topk
    return out


def targets(n: int, ignored: int = 0) -> list[int]:
    return [-100] * ignored + [3] * (n - ignored)


def test_oracle_small_call_by_hand() -> None:
    # rows 0..3: labels [-100, 5, -100, 7], raw logits of row 0
    call = [req(4, labels=[-100, 5, -100, 7], logits=[0])]
    p = oracle.prices(call, SMALL, {})
    assert (p.rows, p.union_rows) == (4, 3)  # rows 0, 1, 3 (row 2: ignored, unprojected)
    assert p.target_graph_rows == 3  # row 0 is ignored but projected by the logits
    assert p.head_chunk_rows == 3
    assert p.retention == 4 * 2 * 8 * 2
    assert p.head == 3 * 3 * 1024 * 2
    assert p.outputs == 1 * 1000 * 2
    body = 4 * 16 * (2 + 29) + SMALL_GRADS
    forward = 4 * 16 * (2 + 3) + 3 * 1024 * 2
    assert p.static == max(body, forward) == body
    assert p.legacy == math.ceil(1.10 * (body + 2000))
    # the parameter gradients make the body branch the larger one here: max, not sum
    assert p.retention + p.head == 128 + 18432 < body == 20624
    assert p.demand == p.legacy == math.ceil(1.10 * (20624 + 2000))


def test_oracle_global_union_and_short_final_chunk() -> None:
    # 300 top-k rows then 300 targets: chunk 0 = 300 top-k + 212 targets, chunk 1 = 88 targets
    call = [req(300, topk_positions=list(range(300)), topk=4), req(300, labels=targets(300))]
    p = oracle.prices(call, SMALL, {})
    assert (p.union_rows, p.target_graph_rows, p.head_chunk_rows) == (600, 300, 212)
    assert p.head == 3 * 212 * 1024 * 2
    assert p.outputs == 300 * 4 * 10
    # two target requests share the first chunk of the global union: 512, not 300 per request
    two = oracle.prices([req(300, labels=targets(300)), req(300, labels=targets(300))], SMALL, {})
    assert two.head_chunk_rows == 512


def test_oracle_added_row_can_lower_the_exact_price() -> None:
    base = oracle.prices([req(512, labels=targets(512))], SMALL, {})
    added = oracle.prices([req(1, logits=[0]), req(512, labels=targets(512))], SMALL, {})
    assert base.head_chunk_rows == 512
    assert added.head_chunk_rows == 511  # the last target moved into a 1-row final chunk
    assert added.head < base.head


def test_oracle_ignored_rows_count_only_when_projected() -> None:
    unprojected = oracle.prices([req(600, labels=targets(600, ignored=560))], SMALL, {})
    assert (unprojected.union_rows, unprojected.head_chunk_rows) == (40, 40)
    projected = oracle.prices([req(600, labels=targets(600, ignored=560), logits=list(range(560)))], SMALL, {})
    assert (projected.union_rows, projected.target_graph_rows, projected.head_chunk_rows) == (600, 600, 512)
    # the retention charges every gradient-enabled physical row, projected or not
    assert unprojected.retention == projected.retention == 600 * 2 * 8 * 2


def test_oracle_unsupported_configurations_keep_the_previous_price() -> None:
    call = [req(400, labels=targets(400, ignored=100))]
    supported = oracle.prices(call, SMALL, {})
    assert supported.demand > supported.legacy
    for runtime in (
        {"recompute": "selective"},
        {"recompute": "none"},
        {"precision": "fp8"},
        {"head_hooks": True},
        {"tensor_parallel": 2},
    ):
        p = oracle.prices(call, SMALL, runtime)
        assert not p.supported and p.demand == p.legacy == supported.legacy


def test_oracle_inference_call_has_no_backward_charge() -> None:
    p = oracle.prices([req(100, logits=list(range(100)))], SMALL, {})
    assert not p.trains and p.retention == 0 and p.head_chunk_rows == 0 and p.demand == p.legacy


@functools.cache
def _scenarios() -> tuple[Any, ...]:
    import tomllib

    table = tomllib.loads((CASE_DIR / "grader" / "scenarios.toml").read_text())["scenario"]
    return tuple(kit.Scenario.from_request({**raw, "backend": "gloo"}) for raw in table)


@functools.cache
def _specs(name: str) -> str:
    """A scenario's calls files as JSON (generated once: the 100k-row calls take a while)."""
    return json.dumps(next(s for s in _scenarios() if s.name == name).specs())


def test_calls_are_deterministic_and_the_big_ones_have_100k_rows() -> None:
    scenarios = {sc.name: sc for sc in _scenarios()}
    for sc in scenarios.values():
        assert json.dumps(sc.specs()) == json.dumps(sc.specs())
    for name in ("exact-100k", "sparse-labels-100k"):
        (spec,) = scenarios[name].specs()
        assert sum(len(r["tokens"]) for r in spec["calls"][0]["requests"]) == 100_000
    first, second = scenarios["two-files"].specs()
    assert first["model"] != second["model"] and second["budget_bytes"] == 12_000_000
    assert not any("labels" in r for r in first["calls"][0]["requests"]), "a forward-only call"
    labels = second["calls"][0]["requests"][0]["labels"]
    assert [i for i, lab in enumerate(labels) if lab != -100] == [594, 595, 596, 597], "4 labels, then padding"


def test_peaks_pin_the_shipped_rank_and_cover_every_piece_a_plan_can_run() -> None:
    table = json.loads((CASE_DIR / "grader" / "peaks.json").read_text())
    assert table["workspace"] == measure.workspace_digests(), (
        "the shipped rank changed since its peaks were measured: rerun envs/admission_backward_oom/grader/measure.py"
    )
    wanted = set()
    for sc in _scenarios():
        for spec in sc.specs():
            for entry in (e for e in spec["calls"] if e["execute"]):
                reqs = entry["requests"]
                wanted |= {measure.key(spec["model"], spec["runtime"], reqs[i:j])
                           for i in range(len(reqs)) for j in range(i + 1, len(reqs) + 1)}  # fmt: skip
    assert wanted == set(table["peaks"]), "peaks.json is stale: rerun envs/admission_backward_oom/grader/measure.py"


Records = dict[str, dict[str, Any]]


def _honest(spec: dict[str, Any]) -> Records:
    """Results as the reference planner writes them: oracle prices, greedy pieces."""
    out: Records = {}
    for entry in spec["calls"]:
        reqs, budget = entry["requests"], spec["budget_bytes"]
        runtime = entry.get("runtime", spec["runtime"])
        demand = oracle.prices(reqs, spec["model"], runtime).demand
        pieces: list[list[int]] = []
        for i in range(len(reqs)):
            grown = [*pieces[-1], i] if pieces else [i]
            if pieces and oracle.prices([reqs[k] for k in grown], spec["model"], runtime).demand <= budget:
                pieces[-1] = grown
            else:
                pieces.append([i])
        decision = "run" if demand <= budget else "split"
        if decision == "run":
            pieces = [list(range(len(reqs)))]
        prices = [oracle.prices([reqs[k] for k in p], spec["model"], runtime).demand for p in pieces]
        executed = [{"requests": p, "ok": True, "peak_bytes": 1} for p in pieces] if entry["execute"] else []
        out[entry["name"]] = {"name": entry["name"], "decision": decision, "demand_bytes": demand, "pieces": pieces,
                              "piece_demand_bytes": prices, "plan_s": 0.01, "executed": executed}  # fmt: skip
    return out


def _verdict(name: str, tamper: Callable[[Records], None] | None = None, duration: float = 5.0, unit: int = 1) -> Any:
    sc = next(s for s in _scenarios() if s.name == name)
    records = [_honest(spec) for spec in json.loads(_specs(name))]
    if tamper is not None:
        tamper(records[0])
    inputs = judge.judgekit.PhaseInputs(oracle=None, duration_s=duration, unit_scenarios=unit, timed_out=False)
    return judge.make_kit(inputs).compare(sc, judge.Observation(records))


def test_the_judge_passes_honest_plans_and_attacks_fail_each_check() -> None:
    for name in ("pure-targets", "refuse-oversize", "short-final-chunk", "two-files", "unsupported-configs",
                 "sparse-labels-100k", "exact-100k"):  # fmt: skip
        verdict = _verdict(name, lambda r: r.update((k, {**v, "decision": "refuse", "pieces": [],
                           "piece_demand_bytes": [], "executed": []}) for k, v in list(r.items()))) \
            if name == "refuse-oversize" else _verdict(name)  # fmt: skip
        assert verdict.status == "pass", (name, verdict.reason)

    def field(call: str, **changes: Any) -> Callable[[Records], None]:
        return lambda records: records[call].update(changes)

    def scale(call: str, factor: float) -> Callable[[Records], None]:
        def tamper(records: Records) -> None:
            rec = records[call]
            rec["demand_bytes"] = int(rec["demand_bytes"] * factor)
            rec["piece_demand_bytes"] = [int(d * factor) for d in rec["piece_demand_bytes"]]

        return tamper

    attacks = [
        ("short-final-chunk", scale("topk-then-targets", 0.9), "below its measured peak"),
        ("short-final-chunk", scale("topk-then-targets", 1.2), "needless splits"),
        ("short-final-chunk", field("topk-then-targets", decision="split"), "decision split"),
        (
            "short-final-chunk",
            field("topk-then-targets", executed=[{"requests": [0], "ok": True}]),
            "not executed whole",
        ),
        (
            "short-final-chunk",
            field("topk-then-targets", executed=[{"requests": [0, 1], "ok": False, "error": "oom"}]),
            "failed in the run",
        ),
        (
            "pure-targets",
            field("six-requests", pieces=[[0], [1], [2], [3], [4], [5]], piece_demand_bytes=[1] * 6),
            "split needlessly",
        ),
        ("pure-targets", field("six-requests", pieces=[[0, 1, 2], [4, 5]]), "do not partition"),
        ("pure-targets", scale("six-requests", 0.5), "below its measured peak"),
        (
            "refuse-oversize",
            field("one-long-request", decision="run", executed=[{"requests": [0], "ok": True}]),
            "exceeds the budget",
        ),
        (
            "body-dominant",
            field("long-sequences", decision="refuse", pieces=[], piece_demand_bytes=[], executed=[]),
            "refused, but every request fits",
        ),
        ("unsupported-configs", scale("fp8", 1.01), "the previous price"),
        ("exact-100k", scale("hundred-thousand-rows", 0.99), "oracle prices"),
        ("sparse-labels-100k", scale("few-labels-between-topk", 2.4), "oracle prices"),
    ]
    for name, tamper, message in attacks:
        verdict = _verdict(name, tamper)
        assert verdict.status == "fail" and message in verdict.reason, (name, message, verdict.reason)
    slow = _verdict("exact-100k", duration=31.0)
    assert slow.status == "fail" and "by the host's clock" in slow.reason
    assert _verdict("exact-100k", unit=3).status == "retry", "a time not measured alone is never a verdict"


def test_the_judge_never_believes_reported_peaks_and_a_missing_peak_is_not_a_verdict(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    forged = _verdict("pure-targets", lambda r: r["six-requests"].update(
        decision="run", pieces=[list(range(6))], piece_demand_bytes=[1], demand_bytes=1,
        executed=[{"requests": list(range(6)), "ok": True, "peak_bytes": 1}]))  # fmt: skip
    assert forged.status == "fail" and "below its measured peak" in forged.reason
    monkeypatch.setattr(judge, "PEAKS", {})
    assert _verdict("pure-targets").status == "retry"


def test_results_are_read_as_adversarial_data(tmp_path: Path) -> None:
    good = {"name": "c", "decision": "run", "demand_bytes": 5, "pieces": [[0]], "piece_demand_bytes": [5],
            "executed": []}  # fmt: skip
    assert judge.read_results(_write(tmp_path / "ok.jsonl", [good]))["c"]["demand_bytes"] == 5
    for label, lines in {
        "twice": [good, good],
        "decision": [{**good, "decision": "maybe"}],
        "demand": [{**good, "demand_bytes": True}],
        "pieces": [{**good, "pieces": [[0.5]]}],
        "executed": [{**good, "executed": ["x"]}],
    }.items():
        with pytest.raises(judge.ArtifactError):
            judge.read_results(_write(tmp_path / f"{label}.jsonl", lines))
    (tmp_path / "junk.jsonl").write_text("{not json\n")
    with pytest.raises(judge.ArtifactError):
        judge.read_results(tmp_path / "junk.jsonl")
    (tmp_path / "link.jsonl").symlink_to(tmp_path / "ok.jsonl")
    with pytest.raises(judge.ArtifactError):
        judge.read_results(tmp_path / "link.jsonl")


def _write(path: Path, records: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


@pytest.mark.slow
def test_reference_planner_agrees_with_the_oracle(runtime, tmp_path: Path) -> None:  # noqa: ANN001
    """The reference repair's prices equal the oracle's on every scenario call (runtime python)."""
    import shutil

    workspace = tmp_path / "workspace"
    shutil.copytree(CASE_DIR / "workspace", workspace)
    patch = (CASE_DIR / "grader" / "reference.patch").read_text()
    subprocess.run(["patch", "-p1", "-s"], input=patch, text=True, cwd=workspace, check=True)
    script = f"""
import json, sys, tomllib
sys.path[:0] = [{str(workspace)!r}, {str(CASE_DIR / "grader")!r}, {str(CASE_DIR / "grader" / "kit")!r},
                {str(ROOT / "gym_trainfail" / "harnesslib")!r}]
from oracle import prices
from scenario import Scenario
from packrl.admission import AdmissionPlanner
from packrl.calls import Call
from packrl.config import ModelConfig, RuntimeConfig, from_dict
out = []
for raw in tomllib.load(open({str(CASE_DIR / "grader" / "scenarios.toml")!r}, 'rb'))['scenario']:
  sc = Scenario.from_request(raw)
  for spec in sc.specs():
    for e in spec['calls']:
        rt = e.get('runtime', spec['runtime'])
        planner = AdmissionPlanner(from_dict(ModelConfig, spec['model']), from_dict(RuntimeConfig, rt), 1)
        out.append([sc.name, e['name'], planner.demand(Call.from_dicts(e['requests'])),
                    prices(e['requests'], spec['model'], rt).demand])
print(json.dumps(out))
"""
    done = subprocess.run(
        [str(runtime.bin_dir / "python"), "-c", script],
        capture_output=True,
        text=True,
        timeout=300,
        env={"OMP_NUM_THREADS": "1", "PATH": "/usr/bin:/bin"},
    )
    assert done.returncode == 0, done.stderr[-2000:]
    rows = json.loads(done.stdout.strip().splitlines()[-1])
    assert len(rows) == 19
    for scenario, call, planned, priced in rows:
        assert planned == priced, (scenario, call)


def _grade(patch: str, scenarios: list[str]):  # noqa: ANN202
    """Grade a shipped patch (``reference`` or a wrong repair's name) on some scenarios, in bubblewrap."""
    import shutil
    import tempfile

    from gym_trainfail import get_case
    from gym_trainfail.files import apply_patch
    from gym_trainfail.grading import Grader

    case = get_case(CASE_ID)
    path = CASE_DIR / "grader" / ("reference.patch" if patch == "reference" else f"wrong_repairs/{patch}.patch")
    with tempfile.TemporaryDirectory() as scratch:
        workspace = Path(scratch) / "ws"
        shutil.copytree(case.workspace_dir, workspace)
        apply_patch(workspace, path)
        selected = [s for s in case.scenarios if s.name in scenarios]
        return Grader(case, sandbox="bwrap", cache=False).grade_dir(workspace, scenarios=selected)


def test_shipped_wrong_repairs_are_the_documented_ones() -> None:
    shipped = {p.stem for p in (CASE_DIR / "grader" / "wrong_repairs").glob("*.patch")}
    assert shipped == WRONG_REPAIRS | {"split-every-request", "self-timed-planner"}
    readme = (CASE_DIR / "grader" / "README.md").read_text()
    assert all(f"`{name}`" in readme for name in shipped)


@pytest.mark.slow
def test_planning_time_comes_from_the_host_clock(runtime, bwrap_usable) -> None:  # noqa: ANN001
    """The planning-only 100k-row call runs alone and is timed by the host. A planner that sleeps
    35 s and reports its CPU time (or 0.05 s once it sees the grader's kit) fails; the reference,
    which plans in a fraction of a second, passes, with the host's figure in its metrics."""
    timed = _grade("self-timed-planner", ["exact-100k"])
    (outcome,) = timed.outcomes
    assert outcome.status == "fail", outcome
    assert "host's clock" in outcome.reason or "stopped at its time limit" in outcome.reason, outcome.reason
    call = outcome.metrics["calls"]["hundred-thousand-rows"]
    assert call["run_reported_plan_s"] <= 0.05  # what the revision claimed, never believed
    assert call["unit_s"] > 30
    reference = _grade("reference", ["exact-100k"])
    (outcome,) = reference.outcomes
    assert outcome.status == "pass", outcome.reason
    assert 0 < outcome.metrics["calls"]["hundred-thousand-rows"]["unit_s"] <= 30


@pytest.mark.slow
def test_needless_splits_fail(runtime, bwrap_usable) -> None:  # noqa: ANN001
    """Correct prices, but one request per piece where three fit together: rejected by the
    oracle's price of each piece with the next request; the reference's greedy pieces pass."""
    split = _grade("split-every-request", ["pure-targets", "layers16-vocab4k"])
    assert [o.status for o in split.outcomes] == ["fail", "fail"], split.outcomes
    assert all("split needlessly" in o.reason for o in split.outcomes), [o.reason for o in split.outcomes]
    reference = _grade("reference", ["pure-targets", "layers16-vocab4k"])
    assert [o.status for o in reference.outcomes] == ["pass", "pass"], [o.reason for o in reference.outcomes]
    for outcome in reference.outcomes:
        for call in outcome.metrics["calls"].values():
            assert 1.0 <= call["demand"] / call["measured_peak"] <= 1.10 * 1.05, (outcome.scenario, call)


@pytest.mark.slow
def test_pinned_peaks_are_what_the_shipped_rank_measures(runtime: Runtime) -> None:
    """A sample of ``peaks.json`` (every piece of two scenarios) measured again on the shipped
    rank, in the case runtime: the same bytes (the meter counts storage exactly)."""
    script = f"""
import json, sys, tomllib
sys.path[:0] = [{str(CASE_DIR / "workspace")!r}, {str(CASE_DIR / "grader")!r}, {str(CASE_DIR / "grader" / "kit")!r},
                {str(ROOT / "gym_trainfail" / "harnesslib")!r}]
import torch
from measure import key
from packrl.calls import Call
from packrl.config import ModelConfig, RuntimeConfig, from_dict
from packrl.model import Decoder
from packrl.trainer import run_call
from scenario import Scenario
torch.set_num_threads(1)
pinned = json.load(open({str(CASE_DIR / "grader" / "peaks.json")!r}))["peaks"]
out = []
for raw in tomllib.load(open({str(CASE_DIR / "grader" / "scenarios.toml")!r}, "rb"))["scenario"]:
    if raw["name"] not in ("short-final-chunk", "two-files"):
        continue
    for spec in Scenario.from_request(raw).specs():
        model = Decoder.build(from_dict(ModelConfig, spec["model"]), from_dict(RuntimeConfig, spec["runtime"]))
        for entry in spec["calls"]:
            reqs = entry["requests"]
            for i in range(len(reqs)):
                for j in range(i + 1, len(reqs) + 1):
                    measured = run_call(model, Call.from_dicts(reqs[i:j])).peak_bytes
                    out.append([measured, pinned.get(key(spec["model"], spec["runtime"], reqs[i:j]))])
print(json.dumps(out))
"""
    done = subprocess.run(
        [str(runtime.bin_dir / "python"), "-c", script],
        capture_output=True,
        text=True,
        timeout=900,
        env={"OMP_NUM_THREADS": "1", "PATH": "/usr/bin:/bin"},
    )
    assert done.returncode == 0, done.stderr[-2000:]
    pairs = json.loads(done.stdout.strip().splitlines()[-1])
    assert len(pairs) == 3 + 6 + 36
    assert all(measured == pinned for measured, pinned in pairs), pairs
