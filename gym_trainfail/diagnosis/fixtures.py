"""A rubric checked against its author's statement fixtures: correct diagnoses, near misses and
the known wrong explanations. Qualification prints the precision and recall per judge."""

from __future__ import annotations

from dataclasses import dataclass

from gym_trainfail.diagnosis.judges import Judge, judge_statements
from gym_trainfail.diagnosis.rubric import Rubric


@dataclass(frozen=True)
class FixtureCheck:
    """How a judge classified a rubric's fixtures."""

    judge: str
    true_positive: int
    false_positive: int
    false_negative: int
    true_negative: int
    undecided: int
    #: Labels (or openings) of the fixtures the judge got wrong or could not decide.
    misjudged: tuple[str, ...]

    @property
    def precision(self) -> float | None:
        called = self.true_positive + self.false_positive
        return self.true_positive / called if called else None

    @property
    def recall(self) -> float | None:
        actual = self.true_positive + self.false_negative
        return self.true_positive / actual if actual else None

    def to_json(self) -> dict[str, object]:
        return {
            "judge": self.judge,
            "precision": self.precision,
            "recall": self.recall,
            "true_positive": self.true_positive,
            "false_positive": self.false_positive,
            "false_negative": self.false_negative,
            "true_negative": self.true_negative,
            "undecided": self.undecided,
            "misjudged": list(self.misjudged),
        }


def check_fixtures(rubric: Rubric, judge: Judge) -> FixtureCheck:
    """Judge every fixture of ``rubric``; an undecided verdict counts against recall or
    specificity like a wrong one, and is listed."""
    verdicts = judge_statements([f.text for f in rubric.fixtures], rubric, judge)
    counts = {"tp": 0, "fp": 0, "fn": 0, "tn": 0, "undecided": 0}
    misjudged = []
    for fixture, verdict in zip(rubric.fixtures, verdicts, strict=True):
        called = verdict.correct is True
        if verdict.correct is None:
            counts["undecided"] += 1
        key = ("tp" if called else "fn") if fixture.correct else ("fp" if called else "tn")
        counts[key] += 1
        if verdict.correct is None or called != fixture.correct:
            expected = "correct" if fixture.correct else "incorrect"
            misjudged.append(f"{fixture.label or fixture.text[:60]} (expected {expected})")
    return FixtureCheck(judge.identity, counts["tp"], counts["fp"], counts["fn"], counts["tn"],
                        counts["undecided"], tuple(misjudged))  # fmt: skip
