"""Judges: is a statement a correct diagnosis of the case, by its rubric?

Both judges apply one definition (``docs/diagnosis.md``): a statement is a diagnosis when every
concept of the mechanism is asserted in it as the agent's own current belief, none of those
assertions is withdrawn later in the statement, and no known wrong explanation is asserted.
Each judge answers per concept, with the span of the statement that asserts it
(:class:`Verdict` ``evidence``).

:class:`RubricJudge` (the default) is deterministic and needs no network: a concept is asserted
where one of its phrasings matches anywhere in the statement and :mod:`.reading` finds the match
neither negated, denied nor withdrawn. :class:`~.llm_judge.LLMJudge` asks a model behind any
OpenAI-compatible endpoint for a per-concept answer with exact quotes, which the code checks.
:func:`judge_statements` caches verdicts per (statement text, rubric, judge).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from gym_trainfail.diagnosis.reading import Assertion, assertions, denials, views, withdrawals, withdrawn
from gym_trainfail.diagnosis.rubric import Concept, Rubric
from gym_trainfail.hashing import bytes_digest
from gym_trainfail.paths import home

EXCERPT_CHARS = 300
#: A quote kept as evidence is cut to this many characters.
QUOTE_CHARS = 400
#: Bump when judging changes, so cached verdicts are recomputed.
JUDGE_CACHE_VERSION = 16


@dataclass(frozen=True)
class Verdict:
    """A judge's answer about one statement. ``correct`` is ``None`` when the judge could not
    decide (an LLM answer that failed the schema or quoted text that is not in the statement):
    never counted as a diagnosis. ``concepts`` and ``wrong`` name what the statement asserts;
    ``evidence`` gives, per asserted name, the quote (a substring of the statement) asserting it."""

    correct: bool | None
    concepts: tuple[str, ...] = ()
    wrong: tuple[str, ...] = ()
    passage: str = ""
    note: str = ""
    evidence: tuple[tuple[str, str], ...] = ()
    #: Whether the statement withdrew a diagnosis it had stated.
    withdrawn: bool = False

    def to_json(self) -> dict[str, object]:
        return {
            "correct": self.correct,
            "concepts": list(self.concepts),
            "wrong": list(self.wrong),
            "passage": self.passage,
            "note": self.note,
            "evidence": {name: quote for name, quote in self.evidence},
            "withdrawn": self.withdrawn,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Verdict:
        correct = data.get("correct")
        evidence = data.get("evidence")
        return cls(
            correct=correct if isinstance(correct, bool) else None,
            concepts=tuple(str(c) for c in data.get("concepts") or ()),
            wrong=tuple(str(w) for w in data.get("wrong") or ()),
            passage=str(data.get("passage", "")),
            note=str(data.get("note", "")),
            evidence=tuple((str(k), str(v)) for k, v in evidence.items()) if isinstance(evidence, Mapping) else (),
            withdrawn=data.get("withdrawn") is True,
        )


class Judge(Protocol):
    """Judges statements against a rubric."""

    @property
    def identity(self) -> str:
        """What the judge is (name, model, endpoint): part of the verdict cache key."""
        ...

    def judge(self, statement: str, rubric: Rubric) -> Verdict: ...


class RubricJudge:
    """The deterministic judge: each required concept asserted somewhere in the statement by one of
    its phrasings or its alternatives' (not negated, denied or withdrawn), no concept the mechanism
    entails denied, and no wrong explanation asserted."""

    identity = "rubric"

    def judge(self, statement: str, rubric: Rubric) -> Verdict:
        wrong_patterns = [p for w in rubric.wrong for p in w.phrasings]
        taken_back = withdrawals(statement, wrong_patterns)
        read = views(statement)
        found = {c.name: _asserted(c, read, taken_back, wrong=False) for c in (*rubric.concepts, *rubric.entailed)}
        blamed = {w.name: _asserted(w, read, taken_back, wrong=True) for w in rubric.wrong}
        stated = {name: a for name, a in found.items() if a is not None}
        asserted_wrong = {name: a for name, a in blamed.items() if a is not None}
        denied = {c.name: d for c in rubric.entailed if c.name not in stated
                  and (d := _denied(c, read, taken_back)) is not None}  # fmt: skip
        # Withdrawn: every concept was stated at some point, but not all of them still stand.
        ever = all(_asserted(c, read, [], wrong=False) is not None for c in rubric.concepts)
        correct = all(c.name in stated for c in rubric.concepts) and not asserted_wrong and not denied
        evidence = tuple((name, _quote(statement, a)) for name, a in (*stated.items(), *asserted_wrong.items()))
        passage = _excerpt(" … ".join(_quote(statement, a) for a in stated.values())) if correct else ""
        via = [_via(c, statement, stated[c.name]) for c in rubric.concepts if c.alternatives and c.name in stated]
        note = "; ".join([*via, *(f"denies {name!r}: {_quote(statement, d)!r}" for name, d in denied.items())])
        return Verdict(correct, tuple(sorted(stated)), tuple(sorted(asserted_wrong)), passage, note.strip("; "),
                       evidence, withdrawn=ever and not correct and bool(taken_back))  # fmt: skip


def _asserted(concept: Concept, read: Sequence[Any], taken_back: Sequence[Any], *, wrong: bool) -> Assertion | None:
    """The first assertion of ``concept`` that is not withdrawn later, in any view."""
    found: list[Assertion] = []
    for view in read:
        found += assertions(concept.phrasings, view, wrong=wrong,
                            live=lambda a: not withdrawn(a, taken_back, wrong=wrong))  # fmt: skip
    return min(found, key=lambda a: (a.start, -a.end), default=None)


def _denied(concept: Concept, read: Sequence[Any], taken_back: Sequence[Any]) -> Assertion | None:
    """The first denial of an entailed ``concept`` that is not withdrawn later, in any view."""
    found: list[Assertion] = []
    for view in read:
        found += denials(concept.phrasings, view, live=lambda a: not withdrawn(a, taken_back, wrong=False))
    return min(found, key=lambda a: (a.start, -a.end), default=None)


def _via(concept: Concept, statement: str, at: Assertion) -> str:
    """Which of a concept's phrasings (its own or an alternative's) asserted it."""
    quote = statement[at.start : at.end]
    for view in views(quote):
        for pattern in concept.phrasings:
            if pattern.search(view.text):
                return f"{concept.name!r} via {concept.source(pattern)!r}"
    return f"{concept.name!r}"


def _quote(statement: str, assertion: Assertion) -> str:
    return statement[assertion.start : assertion.end][:QUOTE_CHARS]


def _excerpt(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= EXCERPT_CHARS else text[: EXCERPT_CHARS - 1] + "…"


def judge_statements(
    statements: Sequence[str], rubric: Rubric, judge: Judge, *, cache_dir: Path | None = None
) -> list[Verdict]:
    """Verdicts on ``statements`` (in order), each cached by (statement text, rubric, judge);
    an undecided verdict is not cached, so it is asked again next time."""
    folder = cache_dir or home() / "judgements"
    verdicts = []
    for text in statements:
        key = bytes_digest(json.dumps([JUDGE_CACHE_VERSION, judge.identity, rubric.digest, text]).encode("utf-8"))
        path = folder / f"{key}.json"
        verdict = _cached(path)
        if verdict is None:
            verdict = judge.judge(text, rubric)
            if verdict.correct is not None:
                path.parent.mkdir(parents=True, exist_ok=True)
                partial = path.with_suffix(".tmp")
                partial.write_text(json.dumps(verdict.to_json()), encoding="utf-8")
                partial.replace(path)
        verdicts.append(verdict)
    return verdicts


def _cached(path: Path) -> Verdict | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or not isinstance(data.get("correct"), bool):
        return None
    return Verdict.from_json(data)
