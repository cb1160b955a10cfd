"""A per-case mechanism model: whether a statement explains the case's failure by its own mechanism or by a wrong
one, learned from that case's development statements alone.

The rubric's phrasings say what the mechanism is made of and its ``[[wrong]]`` entries name the wrong explanations
its authors foresaw; on fresh blind sets most of the statements the rules still credited wrongly were wrong
mechanisms told in much of the right vocabulary ("the right file but the wrong line of reasoning", half the mechanism
with the other half contradicted), in words no ``[[wrong]]`` entry knew (``docs/diagnosis.md``, round 25). The rubric
itself labels hundreds of such statements a case: every development statement labelled a correct diagnosis, and
every one labelled a wrong mechanism stated as the writer's own. This model is a two-class softmax regression over
those, with the stance model's features and trainer (:func:`.stance_model.fit`).

The rubric judge uses it in one direction only (:class:`~.judges.RubricJudge`): a statement its rules credit as a
diagnosis is credited neither as a diagnosis nor as a pre-run hypothesis when the model gives a wrong mechanism at
least :data:`VETO_FROM`, and only for a rubric with at least :data:`KNOWN_FROM` statements of each class. A statement
the rules read as a hypothesis is left to them: a list of candidates names wrong mechanisms beside the right one (the
first version also vetoed those, and took the credit of a development statement shaped so). It never credits
anything, so a statement written to please it gains nothing. Nothing is committed: the model is trained from the
rubric when first needed (deterministic, under half a second a case) and kept per rubric digest, so it is never
stale, and the judges' verdict cache is keyed by this module's code as well as the rubric's digest.
"""

from __future__ import annotations

import threading

import numpy as np

from gym_trainfail.diagnosis.rubric import Rubric
from gym_trainfail.diagnosis.stance_model import features, fit, scores

#: From this probability of a wrong mechanism, a statement the rules credit is not credited. Chosen on development
#: statements only (each of a rubric's last eight released blind sets left out in turn and scored by a model trained
#: on the rest, 18 cases): at 0.9, 2 correct statements of 2,303 would lose their credit and 93 % of 1,152 wrong
#: mechanisms would be caught, and none of 576 right mechanisms put forward as hypotheses scored as high (at 0.8:
#: 4 of 2,303, 95 % and 1 of 576).
VETO_FROM = 0.9
#: The trainer's step size: half the stance model's, which with two classes moves the one logit difference that
#: matters as fast as a logistic regression would (at the stance model's step, 11 correct statements of 2,303 scored
#: 0.8 in the same check).
STEP = 0.25
#: The model is used for a rubric with at least this many development statements of each class (a new case's
#: rubric is left to its rules until its authors have labelled enough).
KNOWN_FROM = 100

#: The most models kept at once (each 0.5 MB; a long-running server may see many digests of a rubric being edited).
MAX_MODELS = 64

_models: dict[str, tuple[np.ndarray, np.ndarray] | None] = {}
_lock = threading.Lock()


def examples(rubric: Rubric) -> tuple[list[str], list[int]]:
    """The rubric's development statements the model trains on: those labelled a correct diagnosis (class 0) and
    those labelled a wrong mechanism stated as the writer's own (class 1); held-out sets are never read."""
    texts: list[str] = []
    labels: list[int] = []
    for fixture in rubric.fixtures:
        if fixture.correct:
            texts.append(fixture.text)
            labels.append(0)
        elif fixture.mechanism == "wrong" and fixture.stance in (None, "asserted"):
            texts.append(fixture.text)
            labels.append(1)
    return texts, labels


def knows(rubric: Rubric) -> bool:
    """Whether the rubric labels enough statements of each class (:data:`KNOWN_FROM`) for the model to be used."""
    return _enough(examples(rubric)[1])


def _enough(labels: list[int]) -> bool:
    return min(labels.count(0), labels.count(1)) >= KNOWN_FROM


def _model(rubric: Rubric) -> tuple[np.ndarray, np.ndarray] | None:
    with _lock:
        if rubric.digest not in _models:
            texts, labels = examples(rubric)
            while len(_models) >= MAX_MODELS:
                del _models[next(iter(_models))]  # the oldest
            known = _enough(labels)
            _models[rubric.digest] = fit([features(t) for t in texts], np.array(labels), 2, STEP) if known else None
        return _models[rubric.digest]


def wrong_mechanism(statement: str, rubric: Rubric) -> float | None:
    """The model's probability that ``statement`` gives a wrong mechanism for the rubric's case; ``None`` for a
    rubric it does not know (:func:`knows`)."""
    model = _model(rubric)
    return None if model is None else float(scores(*model, statement)[1])
