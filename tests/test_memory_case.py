"""TrainFail/AdmissionBackwardOOM-v1: the grader's oracle against hand-computed prices (fast, no
sandbox, no torch), and the judge's checks that issue 20's attacks got through (slow: bubblewrap
sandboxes). The full admission gate is the case's admission record (``envs/<case>/admission.json``),
checked and re-derived by rotation in ``tests/test_case_qualification.py``."""

from __future__ import annotations

import filecmp
import importlib.util
import json
import math
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[1]
CASE_DIR = ROOT / "envs" / "admission_backward_oom"
CASE_ID = "TrainFail/AdmissionBackwardOOM-v1"
WRONG_REPAIRS = {
    "sum-not-max",
    "safety-factor-twice",
    "per-request-union",
    "charge-unprojected-ignored",
    "constant-margin",
    "charge-unsupported",
    "labelled-rows-only",
    "upper-bound-only",
}


def _load(name: str, path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


oracle = _load("admission_case_oracle", CASE_DIR / "grader" / "oracle.py")
fixtures = _load("admission_case_fixtures", CASE_DIR / "grader" / "kit" / "fixtures.py")

#: vocab 1000 -> padded 1024; hidden 8; 2 layers; ffn 16
SMALL = {"vocab_size": 1000, "hidden_size": 8, "num_layers": 2, "num_heads": 2, "ffn_hidden_size": 16}
SMALL_GRADS = (1000 * 8 + 2 * (2 * 8 + 4 * 8 * 8 + 3 * 16 * 8) + 8) * 2  # head weight excluded (main_grad)


def req(
    n: int,
    labels: list[int] | None = None,
    logits: list[int] | None = None,
    topk_positions: list[int] | None = None,
    topk: int = 0,
) -> dict:
    out: dict = {"tokens": [1] * n}
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


def test_fixtures_are_deterministic() -> None:
    import tomllib

    scenarios = tomllib.loads((CASE_DIR / "grader" / "scenarios.toml").read_text())["scenario"]
    for sc in scenarios:
        assert json.dumps(fixtures.make_calls(sc["params"])) == json.dumps(fixtures.make_calls(sc["params"]))
    big = next(s for s in scenarios if s["name"] == "exact-100k")
    rows = sum(len(r["tokens"]) for r in fixtures.make_calls(big["params"])["calls"][0]["requests"])
    assert rows == 100_000


def test_trusted_rank_is_the_shipped_rank() -> None:
    trusted = CASE_DIR / "grader" / "trusted" / "packrl"
    shipped = CASE_DIR / "workspace" / "packrl"
    names = sorted(p.name for p in trusted.glob("*.py"))
    assert names == ["__init__.py", "calls.py", "config.py", "head.py", "memory.py", "model.py", "trainer.py"]
    for name in names:
        assert filecmp.cmp(trusted / name, shipped / name, shallow=False), name


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
sys.path[:0] = [{str(workspace)!r}, {str(CASE_DIR / "grader")!r}, {str(CASE_DIR / "grader" / "kit")!r}]
from fixtures import make_calls
from oracle import prices
from packrl.admission import AdmissionPlanner
from packrl.calls import Call
from packrl.config import ModelConfig, RuntimeConfig, from_dict
out = []
for sc in tomllib.load(open({str(CASE_DIR / "grader" / "scenarios.toml")!r}, 'rb'))['scenario']:
    spec = make_calls(sc['params'])
    for e in spec['calls']:
        rt = e.get('runtime', spec['runtime'])
        planner = AdmissionPlanner(from_dict(ModelConfig, spec['model']), from_dict(RuntimeConfig, rt), 1)
        out.append([sc['name'], e['name'], planner.demand(Call.from_dicts(e['requests'])),
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
    assert len(rows) == 15
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
