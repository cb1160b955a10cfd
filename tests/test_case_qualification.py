"""Every in-tree case passes its admission gate, and its plausible wrong repairs are rejected.

Slow: real multi-rank training in bubblewrap sandboxes (tens of seconds per scenario). The
full gate with every wrong repair on every scenario is `trainfail qualify ID --wrong-repairs`;
here each wrong repair is graded on a scenario it must fail, to keep CI affordable.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from gym_trainfail import get_case
from gym_trainfail.cases import CaseSpec
from gym_trainfail.files import apply_patch
from gym_trainfail.grading import Grader, ScenarioOutcome
from gym_trainfail.qualify import Qualification, qualify
from gym_trainfail.runtimes import Runtime

pytestmark = pytest.mark.slow

#: For each case, a scenario every shipped wrong repair must fail (from the full qualification tables).
WRONG_REPAIR_SCENARIO = {
    "TrainFail/DDPTokenAverage-v0": {
        "times-world-size": "ga1-w2",
        "hardcoded-count": "ga1-w2",
        "local-count": "ga2-w2",
        "flag-only": "ga2-w2",
        "global-count-no-world-scale": "ga1-w2",
        "clip-then-rescale": "shipped-clip-w2",
    },
    "TrainFail/TPClipGradNorm-v0": {
        "constant-rescale": "base",
        "count-everything": "base",
        "clip-rank0-only": "base",
        "always-rescale": "shipped-config",
    },
    "TrainFail/FSDPSourceCoherence-v0": {
        "hardcode-source": "shared-b",
        "skip-load": "shared-a",
        "replica-check-only": "mixed",
        "refresh-missing-snapshots": "stale-ref",
        "one-node-config": "mixed",
    },
}

_results: dict[str, Qualification] = {}


def _qualified(case: CaseSpec) -> Qualification:
    if case.id not in _results:
        _results[case.id] = qualify(case, sandbox="bwrap", repeats=2)
    return _results[case.id]


@pytest.mark.parametrize("case_id", sorted(WRONG_REPAIR_SCENARIO))
def test_case_is_admitted(case_id: str, runtime: Runtime, bwrap_usable: None) -> None:
    result = _qualified(get_case(case_id))
    assert result.admitted, result.problems
    unmodified = [v for v in result.variants if v.kind == "unmodified"]
    assert len(unmodified) == 2
    patterns = [[(o.scenario, o.status) for o in v.receipt.outcomes] for v in unmodified]
    assert patterns[0] == patterns[1]
    case = get_case(case_id)
    # the second repeat was graded in scenario groups, and every scenario of a group of two or
    # more was judged in its group (none had to fall back to a run of its own)
    units = Grader(case, sandbox="bwrap").partition(case.scenarios)
    in_groups = {s.name for unit in units if len(unit) > 1 for s in unit}
    assert in_groups, "every in-tree case has a group of two or more scenarios"
    assert {o.scenario for o in unmodified[1].receipt.outcomes if o.grouped} == in_groups
    assert not any(o.grouped for o in unmodified[0].receipt.outcomes)


@pytest.mark.parametrize(
    ("case_id", "repair", "scenario"),
    [(c, r, s) for c, repairs in sorted(WRONG_REPAIR_SCENARIO.items()) for r, s in repairs.items()],
)
def test_wrong_repair_is_rejected(
    case_id: str, repair: str, scenario: str, runtime: Runtime, bwrap_usable: None, tmp_path: Path
) -> None:
    case = get_case(case_id)
    assert set(case.wrong_repairs) == set(WRONG_REPAIR_SCENARIO[case_id])
    outcome = _grade_patched(case, case.wrong_repairs[repair], scenario, tmp_path)
    assert outcome.status == "fail", outcome


def _grade_patched(case: CaseSpec, patch: Path, scenario: str, tmp_path: Path) -> ScenarioOutcome:
    """The workspace with ``patch`` applied, graded on one scenario."""
    workspace = tmp_path / "workspace"
    shutil.copytree(case.workspace_dir, workspace, symlinks=True)
    apply_patch(workspace, patch)
    receipt = Grader(case, sandbox="bwrap", cache=False).grade_dir(workspace, scenarios=[case.scenario(scenario)])
    (outcome,) = receipt.outcomes
    return outcome


def test_ddp_failure_margins(runtime: Runtime, bwrap_usable: None) -> None:
    """Issue figure: the unmodified pipeline fails by a wide margin, the reference passes at ≤ 1e-5."""
    case = get_case("TrainFail/DDPTokenAverage-v0")
    result = _qualified(case)
    kinds = {s.name: s.kind for s in case.scenarios}
    for variant in result.variants:
        for outcome in variant.receipt.outcomes:
            worst = outcome.metrics["max_rel_l2_grad"]
            if variant.kind == "reference" or kinds[outcome.scenario] == "healthy":
                assert worst <= 1e-5, (variant.label, outcome.scenario, worst)
            else:
                assert worst > 1e-2, (variant.label, outcome.scenario, worst)
    # one launch per scenario (repeat 1) and warm grouped launches (repeat 2) measure the same run
    first, second = (v.receipt.outcomes for v in result.variants if v.kind == "unmodified")
    for one, other in zip(first, second, strict=True):
        assert other.metrics["max_rel_l2_grad"] == pytest.approx(one.metrics["max_rel_l2_grad"], rel=1e-6, abs=1e-9)


#: Forgeries that attack a case's own observation (the generic ones — fake outcomes, links,
#: pickles, early exits, killing the harness — are covered cheaply on the echo fixture in
#: tests/test_grading_integrity.py), with a scenario each must fail.
CASE_FORGERY_SCENARIO = [
    ("TrainFail/DDPTokenAverage-v0", "report-oracle-gradients", "ga1-w2"),
    ("TrainFail/DDPTokenAverage-v0", "decoy-training", "ga1-w2"),
    ("TrainFail/TPClipGradNorm-v0", "forge-artifacts", "base"),
]


@pytest.mark.parametrize(("case_id", "forgery", "scenario"), CASE_FORGERY_SCENARIO)
def test_tampering_with_the_observation_is_caught(
    case_id: str, forgery: str, scenario: str, runtime: Runtime, bwrap_usable: None, tmp_path: Path
) -> None:
    case = get_case(case_id)
    outcome = _grade_patched(case, case.forgeries[forgery], scenario, tmp_path)
    assert outcome.status == "fail", outcome
