"""Every milestone table names the judge that made it and that judge's held-out recall; a table
from the deterministic rubric judge says its times are upper bounds."""

from __future__ import annotations

from typing import Any

import pytest

from gym_trainfail.cli.episodes import print_milestones
from gym_trainfail.diagnosis.milestones import MILESTONES
from gym_trainfail.leaderboard.milestone_columns import diagnosis_columns, judge_label


def _diagnosis(judge: str, heldout: Any) -> dict[str, Any]:
    validation = {"jobs": 0, "device_seconds": 0.0, "distinct_commands": 0, "ranks": []}
    return {"judge": judge, "judge_heldout": heldout, "rubric": "digest", "milestones": dict.fromkeys(MILESTONES),
            "engagement": None, "validation": validation}  # fmt: skip


def test_leaderboard_rows_carry_the_judge_and_its_heldout_recall() -> None:
    rubric = diagnosis_columns({"diagnosis": _diagnosis("rubric", {"recall": 0.8333, "precision": 1.0})})
    assert (rubric["judge"], rubric["judge_heldout_recall"]) == ("rubric", 0.8333)
    assert judge_label([rubric]) == "rubric judge (held-out recall 83%; times are upper bounds)"
    llm = diagnosis_columns({"diagnosis": _diagnosis("llm:m@http://x/v1", None)})
    assert judge_label([llm]) == "llm:m@http://x/v1 judge (no held-out set)"
    assert judge_label([diagnosis_columns({})]) == "no judge (no rubric)"
    assert judge_label([rubric, llm]).count("judge (") == 2  # a mixed batch names both


@pytest.mark.parametrize(
    ("judge", "heldout", "title", "bounded"),
    [
        ("rubric", {"recall": 0.75}, "rubric judge; held-out recall 75%", True),
        ("rubric", None, "rubric judge; no held-out set", True),
        ("rubric", {"error": "changed after it was written"}, "held-out set unusable", True),
        ("llm:m@http://x/v1", {"recall": 0.9}, "judge; held-out recall 90%", False),
    ],
)
def test_grade_prints_the_judge_and_its_recall(
    capsys: pytest.CaptureFixture[str], judge: str, heldout: Any, title: str, bounded: bool
) -> None:
    print_milestones(_diagnosis(judge, heldout))
    printed = " ".join(capsys.readouterr().out.split())
    assert title in printed
    assert ("upper bounds" in printed) is bounded
