"""Judges: is a statement a correct diagnosis of the case, by its rubric?

:class:`RubricJudge` (the default) is deterministic and needs no network: a statement is
correct when one passage of it (a window of the rubric's ``passage_chars``) states every
concept of the mechanism (one accepted phrasing each, not negated) and no known wrong
explanation. :class:`~.llm_judge.LLMJudge` asks a model
behind any OpenAI-compatible endpoint for a structured answer. Both answer with a
:class:`Verdict`; :func:`judge_statements` caches an episode's verdicts by (statements, rubric,
judge), like receipts.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Protocol

from gym_trainfail.diagnosis.rubric import Concept, Rubric
from gym_trainfail.hashing import bytes_digest
from gym_trainfail.paths import home

#: Words that take back what follows them in the same clause ("not the per-rank mean").
NEGATION = re.compile(
    r"\b(?:not|no|never|isn't|aren't|wasn't|doesn't|don't|didn't|cannot|can't|rather than|instead of|"
    r"rules? out|ruled out|unlikely|unrelated|irrelevant)\b|n't\b",
    re.IGNORECASE,
)
#: Where a clause starts: a negation before it does not reach past it.
CLAUSE_BREAK = re.compile(r"[;!?\n]|[.:](?=\s|$)|\b(?:but|however|although|whereas)\b", re.IGNORECASE)
NEGATION_REACH = 48
EXCERPT_CHARS = 300
#: Bump when judging changes, so cached verdicts are recomputed.
JUDGE_CACHE_VERSION = 1


@dataclass(frozen=True)
class Verdict:
    """A judge's answer about one statement. ``correct`` is ``None`` when the judge could not
    decide (an LLM answer that failed the schema): never counted as a diagnosis."""

    correct: bool | None
    concepts: tuple[str, ...] = ()
    wrong: tuple[str, ...] = ()
    passage: str = ""
    note: str = ""

    def to_json(self) -> dict[str, object]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Verdict:
        correct = data.get("correct")
        return cls(
            correct=correct if isinstance(correct, bool) else None,
            concepts=tuple(str(c) for c in data.get("concepts") or ()),
            wrong=tuple(str(w) for w in data.get("wrong") or ()),
            passage=str(data.get("passage", "")),
            note=str(data.get("note", "")),
        )


class Judge(Protocol):
    """Judges statements against a rubric."""

    @property
    def identity(self) -> str:
        """What the judge is (name, model, endpoint): part of the verdict cache key."""
        ...

    def judge(self, statement: str, rubric: Rubric) -> Verdict: ...


class RubricJudge:
    """The deterministic judge: concept phrasings co-occurring in one passage."""

    identity = "rubric"

    def judge(self, statement: str, rubric: Rubric) -> Verdict:
        stated: set[str] = set()
        wrong: set[str] = set()
        for passage in passages(statement, rubric.passage_chars):
            found = {c.name for c in rubric.concepts if _states(c, passage)}
            blamed = {w.name for w in rubric.wrong if _states(w, passage)}
            stated |= found
            wrong |= blamed
            if len(found) == len(rubric.concepts) and not blamed:
                return Verdict(True, tuple(sorted(found)), (), _excerpt(passage))
        return Verdict(False, tuple(sorted(stated)), tuple(sorted(wrong)), "")


def passages(text: str, size: int) -> list[str]:
    """``text`` as overlapping windows of ``size`` characters (half a window apart): concepts
    stated within half a window of each other always share one."""
    text = text.strip()
    if len(text) <= size:
        return [text] if text else []
    step = max(1, size // 2)
    return [text[i : i + size] for i in range(0, len(text) - step, step)]


def _states(concept: Concept, passage: str) -> bool:
    """Whether ``passage`` states ``concept``: some phrasing matches with no negation in it or
    before it in the same clause."""
    for pattern in concept.phrasings:
        for match in pattern.finditer(passage):
            before = passage[max(0, match.start() - NEGATION_REACH) : match.start()]
            breaks = list(CLAUSE_BREAK.finditer(before))
            clause = before[breaks[-1].end() :] if breaks else before
            if not NEGATION.search(clause) and not NEGATION.search(match.group(0)):
                return True
    return False


def _excerpt(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= EXCERPT_CHARS else text[: EXCERPT_CHARS - 1] + "…"


def judge_statements(
    statements: Sequence[str], rubric: Rubric, judge: Judge, *, cache_dir: Path | None = None
) -> list[Verdict]:
    """Verdicts on ``statements`` (in order), cached by (statements, rubric, judge)."""
    if not statements:
        return []
    key = bytes_digest(
        json.dumps([JUDGE_CACHE_VERSION, judge.identity, rubric.digest, list(statements)]).encode("utf-8")
    )
    path = (cache_dir or home() / "judgements") / f"{key}.json"
    try:
        cached = json.loads(path.read_text(encoding="utf-8"))
        if isinstance(cached, list) and len(cached) == len(statements):
            return [Verdict.from_json(v) for v in cached]
    except (OSError, ValueError, TypeError, AttributeError):
        pass
    verdicts = [judge.judge(text, rubric) for text in statements]
    if all(v.correct is not None for v in verdicts):  # an undecided verdict is asked again next time
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_suffix(".tmp")
        partial.write_text(json.dumps([v.to_json() for v in verdicts]), encoding="utf-8")
        partial.replace(path)
    return verdicts
