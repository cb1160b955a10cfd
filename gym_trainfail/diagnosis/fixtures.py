"""A rubric checked against labelled statements: its author's fixtures (correct diagnoses, near
misses and the known wrong explanations) or a held-out set (:mod:`.heldout`). Qualification
prints the precision and recall per judge. A statement labelled with its stance is also checked
against the pre-run-hypothesis reading: the right mechanism asserted or hypothesised must be
credited by it, anything else must not."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from gym_trainfail.diagnosis.judges import Judge, Verdict, judge_statements
from gym_trainfail.diagnosis.rubric import Rubric


@dataclass(frozen=True)
class FixtureCheck:
    """How a judge classified labelled statements."""

    judge: str
    true_positive: int
    false_positive: int
    false_negative: int
    true_negative: int
    undecided: int
    #: Labels (or openings) of the statements the judge got wrong or could not decide.
    misjudged: tuple[str, ...]
    #: Statements the pre-run-hypothesis reading had to credit and did, had to credit and did not, and
    #: credited though it had to not (statements without a stance label count only when correct).
    hypothesis_credited: int = 0
    hypothesis_missed: int = 0
    hypothesis_false: int = 0

    @property
    def hypothesis_recall(self) -> float | None:
        actual = self.hypothesis_credited + self.hypothesis_missed
        return self.hypothesis_credited / actual if actual else None

    @property
    def precision(self) -> float | None:
        called = self.true_positive + self.false_positive
        return self.true_positive / called if called else None

    @property
    def recall(self) -> float | None:
        actual = self.true_positive + self.false_negative
        return self.true_positive / actual if actual else None

    @property
    def total(self) -> int:
        return self.true_positive + self.false_positive + self.false_negative + self.true_negative

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
            "hypothesis_recall": self.hypothesis_recall,
            "hypothesis_false": self.hypothesis_false,
            "misjudged": list(self.misjudged),
        }


@dataclass(frozen=True)
class Labelled:
    """A statement, whether it is a correct diagnosis, and what to call it when misjudged."""

    text: str
    correct: bool
    label: str
    #: Whether the pre-run-hypothesis reading must credit it (``None``: not checked).
    hypothesis: bool | None = None


def classify(items: Sequence[Labelled], rubric: Rubric, judge: Judge) -> tuple[FixtureCheck, list[Verdict]]:
    """Judge every statement; an undecided verdict counts against recall or specificity like a
    wrong one, and is listed."""
    verdicts = judge_statements([item.text for item in items], rubric, judge)
    counts = {"tp": 0, "fp": 0, "fn": 0, "tn": 0, "undecided": 0, "h_ok": 0, "h_missed": 0, "h_false": 0}
    misjudged = []
    for item, verdict in zip(items, verdicts, strict=True):
        called = verdict.correct is True
        if verdict.correct is None:
            counts["undecided"] += 1
        key = ("tp" if called else "fn") if item.correct else ("fp" if called else "tn")
        counts[key] += 1
        if verdict.correct is None or called != item.correct:
            expected = "correct" if item.correct else "incorrect"
            misjudged.append(f"{item.label} (expected {expected})")
        elif item.hypothesis is not None and verdict.credits_hypothesis != item.hypothesis:
            expected = "credited as a hypothesis" if item.hypothesis else "not credited as a hypothesis"
            misjudged.append(f"{item.label} (expected {expected})")
        if item.hypothesis is not None:
            credited = verdict.credits_hypothesis
            if item.hypothesis:
                counts["h_ok" if credited else "h_missed"] += 1
            elif credited:
                counts["h_false"] += 1
    check = FixtureCheck(judge.identity, counts["tp"], counts["fp"], counts["fn"], counts["tn"],
                         counts["undecided"], tuple(misjudged), counts["h_ok"], counts["h_missed"],
                         counts["h_false"])  # fmt: skip
    return check, verdicts


def check_fixtures(rubric: Rubric, judge: Judge) -> FixtureCheck:
    """Judge every fixture of ``rubric``."""
    items = [Labelled(f.text, f.correct, f.label or f.text[:60], f.hypothesis) for f in rubric.fixtures]
    return classify(items, rubric, judge)[0]
