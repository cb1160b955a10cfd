"""The per-case mechanism model: learned from the rubric's own labelled statements, used by the rubric judge only to
take a diagnosis's credit away, never a hypothesis's, and never for a rubric that labels too few."""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

import numpy as np
import pytest

from gym_trainfail.cases import load_case
from gym_trainfail.diagnosis import judges, mechanism_model
from gym_trainfail.diagnosis.judges import RubricJudge
from gym_trainfail.diagnosis.rubric import Fixture, Rubric
from gym_trainfail.diagnosis.stance_model import features, fit

from .conftest import ECHO_CASE

ENVS = Path(__file__).resolve().parents[1] / "envs"
MECHANISM = (
    "the planner prices only the static peak and never the head's target backward, which holds three dense "
    "padded-vocab buffers while the checkpointed inputs stay live"
)
#: The mechanism as a sentence of its own.
STATED = MECHANISM[0].upper() + MECHANISM[1:]
#: A wrong turn no ``[[wrong]]`` entry of the rubric names: only the labelled statements teach it.
TWIST = "and that is only because the zebra kernel rounds every buffer up to a whole gibibyte"


def _rubric(folder: Path) -> Rubric:
    rubric = load_case(folder).rubric
    assert rubric is not None
    return rubric


def _taught(wrong: int, tag: str) -> Rubric:
    """The admission case's rubric with only synthetic development statements: 120 correct diagnoses, and ``wrong``
    statements that tell the same mechanism with the twist (labelled a wrong mechanism), beside 40 hypotheses the
    model must not train on."""
    base = _rubric(ENVS / "admission_backward_oom")
    fixtures = [
        *(Fixture(f"{STATED}; run {i} peaked at {i + 7} GiB.", True, f"c{i}") for i in range(120)),
        *(
            Fixture(
                f"{STATED}, {TWIST}; run {i} peaked at {i + 7} GiB.",
                False,
                f"w{i}",
                "asserted",
                "wrong",
            )
            for i in range(wrong)
        ),
        *(Fixture(f"Maybe {MECHANISM}, {TWIST}; run {i}.", False, f"h{i}", "hypothesised", "right") for i in range(40)),
    ]
    return dataclasses.replace(base, fixtures=tuple(fixtures), digest=f"synthetic-{tag}-{wrong}")


def test_a_diagnosis_the_rules_credit_but_the_case_labels_a_wrong_mechanism_is_not_credited() -> None:
    rubric = _taught(120, "veto")
    statement = f"{STATED}, {TWIST}."
    assert RubricJudge(vetoes=False).judge(statement, rubric).correct is True  # the rules alone credit it
    p = mechanism_model.wrong_mechanism(statement, rubric)
    assert p is not None and p >= mechanism_model.VETO_FROM
    verdict = RubricJudge().judge(statement, rubric)
    assert (verdict.correct, verdict.hypothesis) == (False, False)
    assert "mechanism model reads it as a wrong mechanism" in verdict.note
    # attack: the right mechanism alone, in the words the wrong ones share, keeps its credit
    plain = RubricJudge().judge(f"{STATED}.", rubric)
    assert (plain.correct, plain.hypothesis) == (True, True) and "mechanism model" not in plain.note


def test_a_hypothesis_is_left_to_the_rules() -> None:
    """A list of candidates names wrong mechanisms beside the right one: the model takes no hypothesis credit."""
    rubric = _taught(120, "hypothesis")
    statement = f"Hypothesis, not yet checked: {MECHANISM}, {TWIST}."
    p = mechanism_model.wrong_mechanism(statement, rubric)
    assert p is not None and p >= mechanism_model.VETO_FROM  # the model would take a diagnosis's credit
    alone, both = RubricJudge(vetoes=False).judge(statement, rubric), RubricJudge().judge(statement, rubric)
    assert alone.correct is False and alone.hypothesis is True
    assert (both.correct, both.hypothesis) == (False, True)


def test_a_rubric_that_labels_too_few_wrong_mechanisms_is_left_to_the_rules() -> None:
    rubric = _taught(mechanism_model.KNOWN_FROM - 1, "few")
    statement = f"{STATED}, {TWIST}."
    assert not mechanism_model.knows(rubric) and mechanism_model.wrong_mechanism(statement, rubric) is None
    assert RubricJudge().judge(statement, rubric).correct is True
    assert mechanism_model.knows(_taught(mechanism_model.KNOWN_FROM, "enough"))


def test_the_model_trains_on_correct_and_wrong_mechanism_statements_only_and_deterministically() -> None:
    texts, labels = mechanism_model.examples(_taught(120, "examples"))
    assert (labels.count(0), labels.count(1), len(texts)) == (120, 120, 240)  # the 40 hypotheses are not read
    assert all(TWIST in t for t, y in zip(texts, labels, strict=True) if y == 1)
    rows, y = [features(t) for t in texts], np.array(labels)
    first, again = fit(rows, y, 2, mechanism_model.STEP), fit(rows, y, 2, mechanism_model.STEP)
    assert all(np.array_equal(a, b) for a, b in zip(first, again, strict=True))


def test_every_case_rubric_is_known_and_the_test_case_is_not() -> None:
    for path in sorted(ENVS.glob("*/grader/diagnosis/rubric.toml")):
        assert mechanism_model.knows(_rubric(path.parents[2])), path.parents[2].name
    assert not mechanism_model.knows(_rubric(ECHO_CASE))


def test_the_verdict_cache_is_keyed_by_the_models_code() -> None:
    """Every diagnosis module the judge imports is part of the cache key (an edit to one re-judges)."""
    tree = ast.parse(Path(judges.__file__).read_text())
    imported = {
        f"{alias.name}.py"
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.module == "gym_trainfail.diagnosis"
        for alias in node.names
    }
    assert "mechanism_model.py" in imported and imported <= set(judges.JUDGE_MODULES)


def test_the_models_kept_are_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    """A long-running server sees a new rubric digest at every edit of a rubric: the oldest models are dropped."""
    monkeypatch.setattr(mechanism_model, "MAX_MODELS", 2)
    monkeypatch.setattr(mechanism_model, "_models", {})
    statement = f"{STATED}, {TWIST}."
    first = mechanism_model.wrong_mechanism(statement, _taught(120, "bound-1"))
    for n in (2, 3, 4):
        mechanism_model.wrong_mechanism(statement, _taught(120, f"bound-{n}"))
    assert list(mechanism_model._models) == ["synthetic-bound-3-120", "synthetic-bound-4-120"]
    assert mechanism_model.wrong_mechanism(statement, _taught(120, "bound-1")) == first  # retrained, the same
