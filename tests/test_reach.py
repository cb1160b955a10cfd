"""TrainCheck reach: the spec's schema, what TrainCheck writes read as adversarial data, the
record's key and shape, and (slow) the whole workflow replayed on a tiny pipeline plus a
``study-traincheck`` episode in the traincheck arm."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from gym_trainfail.cases import CaseSpec, load_case
from gym_trainfail.errors import CaseDefinitionError
from gym_trainfail.reach import build_record, load_spec, measure_reach, record_status, write_record
from gym_trainfail.reach.record import check_record, markdown_row
from gym_trainfail.reach.results import (
    MAX_SUMMARY_BYTES,
    CheckResult,
    ResultError,
    Violation,
    culprit_terms,
    naming,
    parse_summary,
    read_summary,
    term_pattern,
)
from gym_trainfail.reach.spec import spec_path
from gym_trainfail.reach.workflow import VariantResult, instrumentable
from gym_trainfail.runtimes import Runtime

from .conftest import ECHO_CASE

REPO = Path(__file__).resolve().parents[1]

# A pipeline small enough for TrainCheck to infer from in seconds: one rank, a linear model, 3
# SGD steps. The failing configuration trains with a zero learning rate, so Optimizer.step stops
# changing the parameters; the healthy one only changes the seed.
TINY_TRAIN = """\
from __future__ import annotations

import argparse

import torch


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--lr", type=float, default=0.1)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--hang", action="store_true")
    args = parser.parse_args()
    torch.manual_seed(args.seed)
    model = torch.nn.Linear(4, 2)
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr)
    for _ in range(3):
        inputs, targets = torch.randn(8, 4), torch.randn(8, 2)
        optimizer.zero_grad()
        loss = torch.nn.functional.mse_loss(model(inputs), targets)
        loss.backward()
        optimizer.step()
    if args.hang:  # a job that stops making progress after its steps (a collective nobody answers)
        import time

        time.sleep(3600)
    print("trained", float(loss))


main()
"""

TINY_SPEC = """\
entry = "tiny/train.py"
models_to_track = ["model"]
tracker = "subclass"
mechanism_terms = ["step"]
infer_args = ["--enable-relation", "APIContainRelation"]
timeout_s = 300

[run.trusted]
command = "python {entry} --seed 1"

[run.failing]
command = "python {entry} --seed 2 --lr 0"

[run.healthy]
command = "python {entry} --seed 3"
"""

VALID_SPEC = """\
entry = "pkg/train.py"
models_to_track = ["model"]

[run.trusted]
devices = 1
command = "python {entry}"

[run.failing]
devices = 2
command = "torchrun --nproc_per_node 2 {entry}"

[run.healthy]
devices = 2
command = "torchrun --nproc_per_node 2 {entry} --seed 3"

[[variant]]
name = "consistency-only"
infer_args = ["--enable-relation", "ConsistencyRelation"]
"""


def _spec(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "reach.toml"
    path.write_text(text)
    return path


# -- the spec ------------------------------------------------------------------------------------


def test_spec_parses_and_lays_variant_overrides_over_runs(tmp_path: Path) -> None:
    text = VALID_SPEC + 'run = { trusted = { devices = 2, command = "torchrun --nproc_per_node 2 {entry}" } }\n'
    spec = load_spec(_spec(tmp_path, text))
    assert [v.name for v in spec.variants] == ["default", "consistency-only"]
    variant = spec.variant("consistency-only")
    assert spec.infer_args_of(variant) == ("--enable-relation", "ConsistencyRelation")
    assert spec.runs_of(variant)["trusted"].devices == 2
    assert spec.runs_of(spec.variants[0])["trusted"].devices == 1
    assert spec.runs["failing"].launch("pkg/tc_train.py") == "torchrun --nproc_per_node 2 pkg/tc_train.py"
    assert spec.runs["failing"].stop_after_s is None
    hangs = load_spec(_spec(tmp_path, text.replace("[run.failing]\n", "[run.failing]\nstop_after_s = 60\n")))
    assert hangs.runs["failing"].stop_after_s == 60
    assert hangs.runs_of(hangs.variant("consistency-only"))["failing"].stop_after_s == 60  # a variant keeps it


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (("models_to_track", "model_to_track"), "unknown key; did you mean 'models_to_track'?"),
        (('[run.healthy]\ndevices = 2\ncommand = "torchrun --nproc_per_node 2 {entry} --seed 3"\n', ""),
         "run.healthy: missing"),
        (('"python {entry}"', '"python pkg/train.py"'), "run.trusted.command: must contain {entry}"),
        (('entry = "pkg/train.py"', 'entry = "../grader/judge.py"'), "expected a relative path"),
        (('entry = "pkg/train.py"', 'entry = "/etc/passwd.py"'), "expected a relative path"),
        (('"ConsistencyRelation"', '"x; rm -rf /"'), "does not match"),
        (("devices = 1", "devices = 0"), "expected an integer from 1 to 16"),
        (("devices = 1", "devices = 1\nstop_after_s = 0"), "run.trusted.stop_after_s: expected an integer from 1"),
        (("devices = 1", "devices = 1\nstop_after_s = true"), "run.trusted.stop_after_s: expected an integer from 1"),
        (('name = "consistency-only"', 'name = "default"'), "names must be unique"),
        (('models_to_track = ["model"]', 'models_to_track = ["model", "m; id"]'), "does not match"),
    ],
)  # fmt: skip
def test_a_broken_spec_is_refused_with_the_key_named(tmp_path: Path, change: tuple[str, str], message: str) -> None:
    old, new = change
    assert old in VALID_SPEC
    with pytest.raises(CaseDefinitionError, match=message.replace("{", r"\{").replace("(", r"\(").replace("?", r"\?")):
        load_spec(_spec(tmp_path, VALID_SPEC.replace(old, new)))


def test_a_missing_spec_says_how_to_write_one(tmp_path: Path) -> None:
    with pytest.raises(CaseDefinitionError, match="no TrainCheck reach spec; write one"):
        load_spec(tmp_path / "reach.toml")


def test_spec_files_must_exist_beside_it(tmp_path: Path) -> None:
    with pytest.raises(CaseDefinitionError, match="'gen.py' is not a file"):
        load_spec(_spec(tmp_path, 'files = ["gen.py"]\n' + VALID_SPEC))


# -- what TrainCheck writes --------------------------------------------------------------------


def _summary(**overrides: object) -> dict[str, object]:
    violation = {"display_name": "torch.optim.SGD.step contains Parameter.data change", "relation_type":
                 "APIContainRelation", "first_step": 1, "last_step": 2, "occurrences": 3}  # fmt: skip
    data: dict[str, object] = {"first_violation_step": 1, "distinct_invariants_violated": 1, "violations": [violation]}
    data.update(overrides)
    return data


def test_a_summary_is_parsed() -> None:
    result = parse_summary(_summary())
    assert result.first_step == 1
    assert result.by_relation() == {"APIContainRelation": 1}


@pytest.mark.parametrize(
    ("summary", "message"),
    [
        (_summary(extra=1), "expected keys"),
        (_summary(distinct_invariants_violated=5), "does not count"),
        (_summary(distinct_invariants_violated=True), "does not count"),
        (_summary(first_violation_step=0), "not the earliest"),
        (_summary(first_violation_step=-3), "expected a step number"),
        (_summary(violations=[{"display_name": "x"}]), "expected exactly the keys"),
        (_summary(violations=[{**_summary()["violations"][0], "display_name": "x" * 5000}]),  # type: ignore[index]
         "display_name"),
        (_summary(violations=[{**_summary()["violations"][0], "relation_type": "<script>"}]),  # type: ignore[index]
         "relation class name"),
        (_summary(violations=[{**_summary()["violations"][0], "occurrences": 0}]),  # type: ignore[index]
         "positive count"),
        (_summary(violations="all of them"), "must be a list"),
    ],
)  # fmt: skip
def test_a_forged_or_malformed_summary_is_refused(summary: dict[str, object], message: str) -> None:
    with pytest.raises(ResultError, match=message):
        parse_summary(summary)


def test_summary_files_that_are_links_fifos_or_huge_are_refused(tmp_path: Path) -> None:
    check = tmp_path / "check" / "trace"
    check.mkdir(parents=True)
    target = check / "violations_summary.json"
    outside = tmp_path / "outside.json"
    outside.write_text(json.dumps(_summary()))
    target.symlink_to(outside)
    with pytest.raises(ResultError, match="not a regular file"):
        read_summary(check)
    target.unlink()
    os.mkfifo(target)
    with pytest.raises(ResultError, match="not a regular file"):  # and it does not block
        read_summary(check)
    target.unlink()
    with target.open("wb") as handle:
        handle.truncate(MAX_SUMMARY_BYTES + 1)
    with pytest.raises(ResultError, match="larger than"):
        read_summary(check)
    target.write_text(json.dumps(_summary()))
    assert read_summary(check).first_step == 1
    with pytest.raises(ResultError, match="the checker wrote no result"):
        read_summary(tmp_path / "check" / "other")
    (tmp_path / "check" / "linked").symlink_to(check)
    with pytest.raises(ResultError, match="the checker wrote no result"):
        read_summary(tmp_path / "check" / "linked")


def test_culprit_terms_match_whole_identifiers_only() -> None:
    terms = culprit_terms(["sft/losses.py"], ["response_token_loss"], ["cross_entropy"])
    assert terms == ["cross_entropy", "response_token_loss", "sft.losses"]
    pattern = term_pattern(terms)
    hits = naming(
        [
            Violation("torch.nn.functional.cross_entropy output changed", "ConsistentOutputRelation", 1, 1),
            Violation("torch.nn.functional.binary_cross_entropy_with_logits", "APIContainRelation", 1, 1),
            Violation("sft.losses_v2.helper", "APIContainRelation", 1, 1),
        ],
        pattern,
    )
    assert [h["term"] for h in hits] == ["cross_entropy"]
    assert term_pattern([]) is None


def _violations(*names: str) -> CheckResult:
    return CheckResult(tuple(Violation(n, "APIContainRelation", 2, 1) for n in names), 2 if names else None)


def test_detection_counts_only_what_the_healthy_run_does_not_break_too(tmp_path: Path) -> None:
    spec = load_spec(_spec(tmp_path, VALID_SPEC))
    same = VariantResult(spec.variants[0], invariants=10, failing=_violations("a", "b"), healthy=_violations("b", "a"))
    assert same.detects is False and same.failing_only() == []
    more = VariantResult(spec.variants[0], invariants=10, failing=_violations("a", "c"), healthy=_violations("a"))
    assert more.detects is True
    assert [v.name for v in more.failing_only()] == ["c"]
    assert more.to_json(spec.runs)["false_alarms"] == 1
    assert VariantResult(spec.variants[0], error="inference failed").detects is None


# -- the record ----------------------------------------------------------------------------------


@pytest.fixture
def reach_case(tmp_path: Path) -> CaseSpec:
    """The echo case with a tiny torch pipeline in its workspace and a reach spec for it."""
    root = tmp_path / "tiny_case"
    shutil.copytree(ECHO_CASE, root)
    shutil.rmtree(root / "grader" / "diagnosis")  # its culprits name the echo program
    (root / "workspace" / "tiny").mkdir()
    (root / "workspace" / "tiny" / "train.py").write_text(TINY_TRAIN)
    spec = spec_path(root / "grader")
    spec.parent.mkdir(parents=True)
    spec.write_text(TINY_SPEC)
    return load_case(root)


def test_a_record_is_keyed_by_workspace_spec_and_lock(reach_case: CaseSpec) -> None:
    assert record_status(reach_case).state == "missing"
    spec = load_spec(spec_path(reach_case.grader_dir))
    result = VariantResult(spec.variants[0], invariants=3, failing=_violations("a"), healthy=_violations())
    write_record(reach_case, build_record(reach_case, spec, [result], backend="bwrap", pool_kind="cpu"))
    status = record_status(reach_case)
    assert status.state == "current", status.reason
    assert status.headline().startswith("detects; 0 false alarms")
    assert markdown_row(reach_case).startswith(f"| `{reach_case.id}` | yes | 0 | no | 2 |")
    (reach_case.workspace_dir / "tiny" / "train.py").write_text(TINY_TRAIN + "\n# changed\n")
    status = record_status(reach_case)
    assert (status.state, status.reason) == ("stale", "changed since measured: workspace")
    assert "[stale" in status.headline()
    (reach_case.workspace_dir / "tiny" / "train.py").write_text(TINY_TRAIN)
    assert record_status(reach_case).state == "current"
    spec_file = spec_path(reach_case.grader_dir)
    spec_file.write_text(spec_file.read_text().replace("--seed 3", "--seed 4"))
    assert record_status(reach_case).reason == "changed since measured: spec"


def test_a_hand_edited_record_is_broken_not_current(reach_case: CaseSpec) -> None:
    spec = load_spec(spec_path(reach_case.grader_dir))
    result = VariantResult(spec.variants[0], invariants=3, failing=_violations(), healthy=_violations())
    record = build_record(reach_case, spec, [result], backend="bwrap", pool_kind="cpu")
    assert check_record(record) == ""
    assert record["summary"]["detects"] is False
    for forged in ({**record, "verdict": "pass"}, {**record, "summary": {**record["summary"], "detects": "yes"}},
                   {**record, "schema": 99}):  # fmt: skip
        write_record(reach_case, forged)
        assert record_status(reach_case).state == "broken"
    (reach_case.root / "traincheck-reach.json").write_text("[1, 2]")
    assert record_status(reach_case).state == "broken"


def test_every_shipped_reach_spec_loads() -> None:
    specs = sorted((REPO / "envs").glob("*/grader/diagnosis/traincheck/reach.toml"))
    assert specs, "no case ships a reach spec"
    for path in specs:
        spec = load_spec(path)
        assert (path.parents[3] / "workspace" / spec.entry).is_file(), path


# -- the workflow, for real (slow) ------------------------------------------------------------


@pytest.mark.slow
def test_the_workflow_replayed_on_a_tiny_pipeline_detects_a_frozen_optimizer(
    reach_case: CaseSpec, traincheck_runtime: Runtime, bwrap_usable: None
) -> None:
    record = measure_reach(reach_case, sandbox="bwrap")
    (variant,) = record["variants"]
    assert variant["error"] is None, variant["steps"]
    assert variant["invariants"] > 0
    assert [s["step"] for s in variant["steps"]] == [
        "collect trusted", "infer", "collect failing", "collect healthy", "check failing and healthy"
    ]  # fmt: skip
    assert variant["detects"] is True, variant
    assert variant["culprit_named"] is True  # the broken invariant names Optimizer.step
    assert record["summary"]["device_seconds"] > 0
    assert not (reach_case.workspace_dir / ".reach").exists()  # it ran on a scratch copy


@pytest.mark.slow
def test_a_failing_run_that_hangs_is_stopped_and_its_partial_trace_checked(
    reach_case: CaseSpec, traincheck_runtime: Runtime, bwrap_usable: None
) -> None:
    # The stop leaves the traced steps time to run first even on a loaded machine: the instrumented import
    # and the 3 steps take ~20 s with two other busy processes on 2 cores (a 20 s stop then cut some CI
    # runs before the first step, and the partial trace held nothing to check).
    spec = spec_path(reach_case.grader_dir)
    spec.write_text(spec.read_text().replace('"python {entry} --seed 2 --lr 0"',
                                             '"python {entry} --seed 2 --lr 0 --hang"\nstop_after_s = 60'))  # fmt: skip
    record = measure_reach(load_case(reach_case.root), sandbox="bwrap")
    (variant,) = record["variants"]
    assert variant["error"] is None, variant["steps"]
    failing = next(s for s in variant["steps"] if s["step"] == "collect failing")
    assert failing["note"].startswith("stopped after 60 s without finishing (a hang)"), failing
    assert 60 <= failing["seconds"] < 180
    assert variant["detects"] is True, variant  # the steps before the hang already break the invariant
    # … and a run allowed to hang that fails at once instead is still a failed collection
    spec.write_text(spec.read_text().replace("--lr 0 --hang", "--lr 0 --no-such-flag"))
    record = measure_reach(load_case(reach_case.root), sandbox="bwrap")
    (variant,) = record["variants"]
    assert variant["error"] is not None and variant["error"].startswith("collecting the failing run failed")


@pytest.mark.slow
def test_a_study_traincheck_episode_on_ddp_is_activated(tmp_path: Path, traincheck_runtime: Runtime,
                                                        bwrap_usable: None) -> None:  # fmt: skip
    run_dir = tmp_path / "run"
    base = [str(Path(sys.executable).with_name("trainfail"))]
    options = ["--agent-option", "workflow=collect", "--agent-option", "repair=false"]
    subprocess.run([*base, "run", "--case", "TrainFail/DDPTokenAverage-v1", "--arm", "traincheck", "--agent",
                    "study-traincheck", "--sandbox", "bwrap", "--out", str(run_dir), "--no-grade", *options],
                   check=True, capture_output=True, timeout=300)  # fmt: skip
    graded = subprocess.run([*base, "grade", str(run_dir), "--json", "--sandbox", "bwrap"], capture_output=True,
                            text=True, timeout=300)  # fmt: skip
    report = json.loads(graded.stdout)
    engagement = report["diagnosis"]["engagement"]
    assert engagement["level"] in ("activated", "acted"), engagement
    assert {"manual", "activated"} <= set(engagement["evidence"])


def test_the_manual_stays_neutral() -> None:
    """The TrainCheck manual is general: it names no case, no culprit file and no case's workspace
    package (what the reach runs taught goes in as general advice)."""
    from gym_trainfail.registry import default_registry

    manual = (REPO / "containers" / "runtime" / "traincheck" / "MANUAL.md").read_text()
    for case in default_registry():
        words = {case.id, case.name, case.root.name}
        if case.rubric is not None:
            for culprit in case.rubric.culprits:
                words |= {
                    culprit.path,
                    culprit.path.split("/")[0] + "/",
                    culprit.path.removesuffix(".py").replace("/", "."),
                }
        found = sorted(w for w in words if w in manual)
        assert not found, f"the manual names {found} of {case.id}"


def test_the_instrumentable_copy_runs_as_a_script_under_traincheck() -> None:
    """No __future__ import (TrainCheck's set-up goes above it), the docstring kept as __doc__,
    relative imports made absolute (the copy runs as a script)."""
    source = '"""Train.\n\nMore."""\nfrom __future__ import annotations\n\nfrom . import a\nfrom .b import c\n'
    source += "def f():\n    from ..d import e\n"
    copy = instrumentable(source, "pkg.sub")
    assert copy.startswith('__doc__ = """Train.')
    assert "__future__" not in copy
    assert "from pkg.sub import a\nfrom pkg.sub.b import c\n" in copy and "    from pkg.d import e" in copy
    namespace: dict[str, object] = {}
    exec(compile(copy.split("from pkg")[0], "copy", "exec"), namespace)  # noqa: S102 - our own literal
    assert namespace["__doc__"] == "Train.\n\nMore."
