"""Every registered case still behaves as its admission record says, at a cost CI can afford.

Records (``envs/<case>/admission.json``, written by ``make qualify``) hold the full gate's verdict
table; ``tests/test_admission.py`` checks each is current. Here, for every registered case with
no edits to this file:

* **smoke gate**: the unmodified workspace and the reference repair are graded on one healthy
  and one failure scenario, in one launch each where the two share a device count; the verdicts
  must be the ones the scenario kinds demand and the ones the record holds.
* **rotation** (``tests/test_case_rotation.py``, a file of its own so that a second test worker
  runs it beside the smoke gates): one case, chosen from the commit (``git rev-parse HEAD`` as a
  number, modulo the number of cases; the UTC day outside git; ``TRAINFAIL_QUALIFY_CASE``
  overrides), is qualified in full (repeats, reference, wrong repairs and forgeries) and its
  verdict table compared with its record, so every record is re-derived every few runs. Its
  choice of case is defined here.

Slow: real multi-rank training in bubblewrap sandboxes.
"""

from __future__ import annotations

import datetime
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from gym_trainfail.admission import (
    load_record,
    qualify_command,
)
from gym_trainfail.cases import CaseSpec, Scenario
from gym_trainfail.files import apply_patch
from gym_trainfail.grading import Grader, Receipt
from gym_trainfail.paths import SOURCE_ROOT
from gym_trainfail.registry import default_registry, get_case
from gym_trainfail.runtimes import Runtime

pytestmark = pytest.mark.slow

#: Names the case the rotation qualifies in full, instead of the commit's choice.
ROTATION_ENV = "TRAINFAIL_QUALIFY_CASE"
CASE_IDS = default_registry().ids()


def smoke_pair(case: CaseSpec) -> tuple[Scenario, Scenario]:
    """The cheapest (healthy, failure) pair: fewest devices, one shared launch if possible,
    shortest time limits; ties go to the scenarios listed first."""
    healthy = [s for s in case.scenarios if s.kind == "healthy"]
    failure = [s for s in case.scenarios if s.kind == "failure"]
    pairs = [(h, f) for h in healthy for f in failure]
    return min(pairs, key=lambda p: (max(p[0].devices, p[1].devices), p[0].devices != p[1].devices,
                                     p[0].timeout_s + p[1].timeout_s))  # fmt: skip


def rotation_index(count: int, head: str | None) -> int:
    """The rotated case's index: the commit hash as a number, else the UTC day number."""
    if head:
        return int(head, 16) % count
    return datetime.datetime.now(datetime.UTC).date().toordinal() % count


def git_head() -> str | None:
    """``git rev-parse HEAD`` of the checkout, or ``None`` outside git (an sdist, an export)."""
    try:
        done = subprocess.run(
            ["git", "-C", str(SOURCE_ROOT), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=30
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    head = done.stdout.strip()
    return head if done.returncode == 0 and len(head) == 40 else None


def rotated_case() -> str:
    chosen = os.environ.get(ROTATION_ENV)
    if chosen:
        return chosen
    return CASE_IDS[rotation_index(len(CASE_IDS), git_head())]


_smoke: dict[str, dict[str, Receipt]] = {}


def _smoke_receipts(case: CaseSpec, tmp_path: Path) -> dict[str, Receipt]:
    """The unmodified workspace and the reference graded on the smoke pair (one grader: its
    oracles are computed once for both revisions)."""
    if case.id not in _smoke:
        grader = Grader(case, sandbox="bwrap", cache=False)
        scenarios = list(smoke_pair(case))
        receipts = {}
        for label, patch in (("unmodified", None), ("reference", case.reference_patch)):
            workspace = tmp_path / label
            shutil.copytree(case.workspace_dir, workspace, symlinks=True)
            if patch is not None:
                apply_patch(workspace, patch)
            receipts[label] = grader.grade_dir(workspace, scenarios=scenarios)
        _smoke[case.id] = receipts
    return _smoke[case.id]


def test_smoke_pair_and_rotation_choices() -> None:
    case = get_case("TrainFail/TPReplicaClipDrift-v1")  # healthy on 1 or 2 devices, failures on 2 or 4
    healthy, failure = smoke_pair(case)
    assert (healthy.kind, failure.kind) == ("healthy", "failure")
    assert healthy.devices == failure.devices == 2  # one shared launch beats a 1-device + 2-device pair
    assert rotation_index(4, "0" * 39 + "6") == 2
    assert rotation_index(4, None) in range(4)
    assert rotated_case() in CASE_IDS


@pytest.mark.parametrize("case_id", CASE_IDS)
def test_smoke_gate(case_id: str, runtime: Runtime, bwrap_usable: None, tmp_path: Path) -> None:
    case = get_case(case_id)
    receipts = _smoke_receipts(case, tmp_path)
    expected = {s.name: ("pass" if s.kind == "healthy" else "fail") for s in smoke_pair(case)}
    got = {label: {o.scenario: o.status for o in r.outcomes} for label, r in receipts.items()}
    assert got["unmodified"] == expected, receipts["unmodified"]
    assert got["reference"] == dict.fromkeys(expected, "pass"), receipts["reference"]
    record = load_record(case)
    assert record is not None, f"{case.id} has no admission record; run `{qualify_command(case)}`"
    for variant in record.variants:
        if variant.kind in ("unmodified", "reference"):
            recorded = {name: variant.scenarios.get(name) for name in expected}
            assert recorded == got[variant.kind], (variant.label, qualify_command(case))


def test_ddp_failure_margins(runtime: Runtime, bwrap_usable: None, tmp_path: Path) -> None:
    """Issue figure: the unmodified pipeline fails by a wide margin, the reference passes at ≤ 1e-5."""
    case = get_case("TrainFail/DDPTokenAverage-v1")
    for label, receipt in _smoke_receipts(case, tmp_path).items():
        for outcome in receipt.outcomes:
            worst = outcome.metrics["max_rel_l2_grad"]
            if label == "reference" or outcome.kind == "healthy":
                assert worst <= 1e-5, (label, outcome.scenario, worst)
            else:
                assert worst > 1e-2, (label, outcome.scenario, worst)
