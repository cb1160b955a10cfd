"""The rotation: one registered case, chosen from the commit (:func:`tests.test_case_qualification.rotated_case`),
qualified in full (repeats, reference, wrong repairs and forgeries) and its verdict table compared with its record,
so every record is re-derived every few runs. In a file of its own: the longest single test of the suite, which a
second test worker runs beside the smoke gates of ``tests/test_case_qualification.py``.

Slow: real multi-rank training in bubblewrap sandboxes.
"""

from __future__ import annotations

import pytest

from gym_trainfail.admission import (
    compare_verdicts,
    failing_hints,
    load_record,
    qualify_command,
    record_from_qualification,
    record_status,
)
from gym_trainfail.grading import Grader
from gym_trainfail.qualify import qualify
from gym_trainfail.registry import get_case
from gym_trainfail.runtimes import Runtime
from tests.test_case_qualification import rotated_case

pytestmark = pytest.mark.slow


def test_rotated_case_requalifies_to_its_record(runtime: Runtime, bwrap_usable: None) -> None:
    case = get_case(rotated_case())
    status = record_status(case)
    assert status.current, status.describe()
    record = load_record(case)
    assert record is not None
    hints = failing_hints(record, case.scenarios)
    result = qualify(case, sandbox="bwrap", repeats=2, wrong_repairs=True, hints=hints)
    assert result.admitted, (case.id, result.problems)
    fresh = record_from_qualification(case, result, sandbox="bwrap", repeats=2)
    problems = compare_verdicts(record, fresh)
    assert not problems, f"{case.id} no longer qualifies as recorded: {problems}; run `{qualify_command(case)}`"
    # the second repeat was graded in scenario groups, and every scenario of a group of two or
    # more was judged in its group (none had to fall back to a run of its own)
    unmodified = [v for v in result.variants if v.kind == "unmodified"]
    units = Grader(case, sandbox="bwrap").partition(case.scenarios)
    in_groups = {s.name for unit in units if len(unit) > 1 for s in unit}
    assert {o.scenario for o in unmodified[1].receipt.outcomes if o.grouped} == in_groups
    assert not any(o.grouped for o in unmodified[0].receipt.outcomes)
