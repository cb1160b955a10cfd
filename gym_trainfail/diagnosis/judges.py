"""Judges: is a statement a correct diagnosis of the case, by its rubric?

Both judges apply one definition (``docs/diagnosis.md``): every concept match has a *stance*
(asserted, hypothesised, withdrawn, attributed, denied); a statement is a diagnosis when every
concept of the mechanism is asserted in it as the agent's own current belief and no known wrong
explanation is asserted, and a pre-run hypothesis when every concept is asserted or hypothesised on
the same condition. Withdrawn, attributed and denied concepts count for neither. Each judge answers
per concept, with the span of the statement that carries it (:class:`Verdict` ``evidence``).

:class:`RubricJudge` (the default) is deterministic and needs no network: a concept is asserted
where one of its phrasings matches anywhere in the statement and :mod:`.reading` finds the match
neither negated, denied nor withdrawn. :class:`~.llm_judge.LLMJudge` asks a model behind any
OpenAI-compatible endpoint for a per-concept answer with exact quotes, which the code checks.
:func:`judge_statements` caches verdicts per (statement text, rubric, judge and its code).
"""

from __future__ import annotations

import functools
import json
import os
import re
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from gym_trainfail.diagnosis import mechanism_model, stance_model
from gym_trainfail.diagnosis.reading import (
    STANCES,
    Assertion,
    cued,
    endorses,
    negations,
    same_sentence,
    stances,
    supposed,
    views,
    withdrawals,
    withdrawn,
)
from gym_trainfail.diagnosis.rubric import Concept, Rubric
from gym_trainfail.hashing import bytes_digest
from gym_trainfail.paths import home

EXCERPT_CHARS = 300
#: A quote kept as evidence is cut to this many characters.
QUOTE_CHARS = 400
#: Bump when the cached verdict's format changes (a change to the judges' code is caught by
#: :func:`code_digest`).
JUDGE_CACHE_VERSION = 19
#: The modules a verdict depends on, besides the rubric and the statement (the stance model's weights too).
JUDGE_MODULES = (
    "judges.py",
    "reading.py",
    "prefilter.py",
    "rubric.py",
    "llm_judge.py",
    "stance_model.py",
    "stance_model.npz",
    "mechanism_model.py",
)


@functools.cache
def code_digest() -> str:
    """Digest of the judges' code (:data:`JUDGE_MODULES`): part of every cache key, so a verdict is
    reused only by the code that made it (a reader change once went unnoticed behind a cache keyed by
    the rubric alone, and fixtures it broke still read as passing)."""
    here = Path(__file__).parent
    return bytes_digest(b"".join(name.encode() + b"\0" + (here / name).read_bytes() for name in JUDGE_MODULES))


@dataclass(frozen=True)
class Verdict:
    """A judge's answer about one statement. ``correct`` is ``None`` when the judge could not
    decide (an LLM answer that failed the schema or quoted text that is not in the statement):
    never counted as a diagnosis. ``concepts`` and ``wrong`` name what the statement asserts;
    ``evidence`` gives, per asserted name, the quote (a substring of the statement) asserting it.

    ``stance`` is how the statement holds the case's mechanism (:data:`~.reading.STANCES`; ``None``
    when it does not state every concept in any stance): ``correct`` is the diagnosis reading
    (asserted, no known wrong explanation asserted, no entailed effect denied) and ``hypothesis`` the
    pre-run-hypothesis reading (asserted or hypothesised, on the same conditions)."""

    correct: bool | None
    concepts: tuple[str, ...] = ()
    wrong: tuple[str, ...] = ()
    passage: str = ""
    note: str = ""
    evidence: tuple[tuple[str, str], ...] = ()
    #: Whether the statement withdrew a diagnosis (or a hypothesis) it had stated.
    withdrawn: bool = False
    stance: str | None = None
    hypothesis: bool | None = None

    def to_json(self) -> dict[str, object]:
        return {
            "correct": self.correct,
            "hypothesis": self.hypothesis,
            "stance": self.stance,
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
        hypothesis = data.get("hypothesis")
        stance = data.get("stance")
        return cls(
            correct=correct if isinstance(correct, bool) else None,
            concepts=tuple(str(c) for c in data.get("concepts") or ()),
            wrong=tuple(str(w) for w in data.get("wrong") or ()),
            passage=str(data.get("passage", "")),
            note=str(data.get("note", "")),
            evidence=tuple((str(k), str(v)) for k, v in evidence.items()) if isinstance(evidence, Mapping) else (),
            withdrawn=data.get("withdrawn") is True,
            stance=stance if stance in STANCES else None,
            hypothesis=hypothesis if isinstance(hypothesis, bool) else None,
        )

    @property
    def credits_hypothesis(self) -> bool:
        """Whether the pre-run-hypothesis reading credits the statement (a verdict without that reading,
        from an older cache entry, falls back to the diagnosis reading)."""
        return self.hypothesis is True if self.hypothesis is not None else self.correct is True


def statement_stance(held: Mapping[str, Mapping[str, Any]], required: Sequence[str]) -> str | None:
    """How a statement holds the mechanism, from each required concept's stances (``held[name]``: the
    stances its matches take): asserted when every concept is asserted; hypothesised when every concept
    is asserted or hypothesised; otherwise, when every concept is stated in some stance, the first of
    withdrawn, attributed, denied that explains the shortfall; ``None`` when a concept is not stated."""
    best = {name: next((s for s in STANCES if s in held.get(name, {})), None) for name in required}
    if all(b == "asserted" for b in best.values()):
        return "asserted"
    if all(b in ("asserted", "hypothesised") for b in best.values()):
        return "hypothesised"
    if any(b is None for b in best.values()):
        return None
    short = {s for name in required if best[name] not in ("asserted", "hypothesised") for s in held[name]}
    return next(s for s in ("withdrawn", "attributed", "denied") if s in short)


def _rejected_later(
    statement: str,
    held: Mapping[str, Mapping[str, Any]],
    required: Sequence[str],
    last: Mapping[str, Any] | None = None,
) -> bool:
    """Whether a concept the statement only puts forward is also read as denied in a later sentence: the writer may
    have rejected what it put forward ("I looked into the idea that the term escapes DDP's averaging … They don't
    escape it: … it is not a missing all-reduce"). Not enough alone: a phrasing may carry its own negation ("no restore
    at recompute", "never multiplies by GA"), which a hedged statement's later sentence also reads as denied; the
    stance model must read the whole statement as denied too. The denial looked at is the concept's last (``last``:
    name to its latest denied match): an earlier one, inside what the writer names before putting it forward ('Ruled
    out the "X" explanation: whether or not X makes no difference … So X is not what breaks it'; round 31), is no
    answer to it. A supposition the statement argues against ("It can't be X. If X were so, Y would …"; round 32) is
    answered by a denial or withdrawal in another sentence on either side."""
    for name in required:
        found = held.get(name, {})
        if "asserted" in found or "hypothesised" not in found:
            continue
        put = found["hypothesised"]
        # round 32: a supposition argued against ("It can't be X. If X were so, Y would … So I'm ruling out the X
        # explanation."): what the statement supposes to refute is no hypothesis, whichever side the denial is on
        against = found.get("denied") or found.get("withdrawn")
        if (
            against is not None
            and supposed(statement, put.start)
            and not same_sentence(statement, put.start, against.start)
        ):
            return True
        if "denied" not in found:
            continue
        denial = (last or {}).get(name) or found["denied"]
        if denial.start > put.start and SENTENCE_END.search(statement, put.start, denial.start):
            return True
    return False


#: A sentence's end between two matches: a full stop, "!" or "?" before a space, or a line break; or a colon that
#: opens the explanation of a verdict ("Whether X runs before or after Y makes no difference: … no micro-batch stays
#: rank-local"; round 27).
SENTENCE_END = re.compile(r"[.!?:](?=\s)|\n")


class Judge(Protocol):
    """Judges statements against a rubric."""

    @property
    def identity(self) -> str:
        """What the judge is (name, model, endpoint): part of the verdict cache key."""
        ...

    def judge(self, statement: str, rubric: Rubric) -> Verdict: ...


class RubricJudge:
    """The deterministic judge: each required concept asserted somewhere in the statement by one of
    its phrasings or its alternatives' (not negated, denied, attributed, hypothesised or withdrawn), no
    concept the mechanism entails denied, and no wrong explanation asserted. Every match gets a stance
    (:mod:`.reading`); the pre-run-hypothesis reading also accepts hypothesised concepts. Two learned models may take
    a credit away, never give one: the stance model (how the whole statement holds what it says) and the case's
    mechanism model (whether it tells the case's mechanism or a wrong one)."""

    identity = "rubric"

    def __init__(self, *, vetoes: bool = True) -> None:
        #: Whether the learned models (:mod:`.stance_model`, :mod:`.mechanism_model`) may take credit away
        #: (``False``: the rules alone, to compare them or to test the rules).
        self.vetoes = vetoes
        if not vetoes:
            # another judge: its verdicts must not share the cache (judge_statements) with the whole judge's
            self.identity = "rubric-rules"

    def judge(self, statement: str, rubric: Rubric) -> Verdict:
        wrong_patterns = [p for w in rubric.wrong for p in w.phrasings]
        taken_back = withdrawals(statement, wrong_patterns)
        read = views(statement)
        held = {c.name: _stances(c, read, taken_back, wrong=False) for c in (*rubric.concepts, *rubric.entailed)}
        blamed = {w.name: a for w in rubric.wrong if (a := _stances(w, read, taken_back, wrong=True).get("asserted"))}
        stated = {name: found["asserted"] for name, found in held.items() if "asserted" in found}
        put = {name: found.get("asserted") or found["hypothesised"] for name, found in held.items()
               if "asserted" in found or "hypothesised" in found}  # fmt: skip
        denied = {c.name: held[c.name]["denied"] for c in rubric.entailed
                  if c.name not in put and "denied" in held[c.name]}  # fmt: skip
        required = [c.name for c in rubric.concepts]
        stance = statement_stance(held, required)
        sound = not blamed and not denied
        correct = stance == "asserted" and sound
        hypothesis = stance in ("asserted", "hypothesised") and sound
        vetoed = ""
        # … also a pre-run hypothesis the model reads as withdrawn ("Candidate: X. Checked it: identical. So it isn't
        # the skip count"); one it reads as someone else's keeps the rules' credit (on blind sets that took more
        # hypotheses than it caught reports)
        veto = stance_model.load().veto(statement) if self.vetoes and (correct or hypothesis) else None
        # … and one it reads as denied where the rules see a concept put forward and denied in a later sentence ("I
        # looked into the idea that X. They don't: …"; round 26)
        rejected = (
            veto is not None
            and veto[0] == "denied"
            and _rejected_later(statement, held, required, _last_denials(rubric, read, taken_back))
        )
        if veto is not None and (correct or veto[0] == "withdrawn" or rejected) and _vetoable(*veto, statement, rubric):
            stance = veto[0]
            correct, hypothesis = False, stance == "hypothesised"
            vetoed = f"stance model reads it as {stance} ({veto[1]:.2f})"
        # a credited diagnosis the case's mechanism model reads as a wrong mechanism (a hypothesis is left to the rules:
        # a list of candidates names wrong mechanisms beside the right one, and puts the right one forward)
        wrong = mechanism_model.wrong_mechanism(statement, rubric) if self.vetoes and correct else None
        if wrong is not None and wrong >= mechanism_model.VETO_FROM:
            correct = hypothesis = False
            vetoed = f"mechanism model reads it as a wrong mechanism ({wrong:.2f})"
        evidence = tuple((name, _quote(statement, a)) for name, a in (*stated.items(), *blamed.items()))
        shown = stated if correct else put if hypothesis else {}
        passage = _excerpt(" … ".join(_quote(statement, a) for a in shown.values())) if shown else ""
        via = [_via(c, statement, put[c.name]) for c in rubric.concepts if c.alternatives and c.name in put]
        note = "; ".join([*via, *(f"denies {name!r}: {_quote(statement, d)!r}" for name, d in denied.items()), vetoed])
        return Verdict(correct, tuple(sorted(stated)), tuple(sorted(blamed)), passage, note.strip("; "), evidence,
                       withdrawn=stance == "withdrawn", stance=stance, hypothesis=hypothesis)  # fmt: skip


def _vetoable(stance: str, p: float, statement: str, rubric: Rubric) -> bool:
    """Whether the learned stance model (:mod:`.stance_model`) may take a credited statement's credit away in
    ``stance``, which it gives probability ``p``. Put forward, withdrawn or someone else's: where the statement shows a
    sign of it the rules know (a report, a hedge, a retraction, a quotation, a "?": :func:`.reading.cued`), or the
    model is surer (:data:`.stance_model.VETO_UNCUED_FROM`) and learned the case's words; and not where it endorses
    or confirms what it reported or put forward, which the rules read ('Priya says: "X" I agree.', "Hypothesis: X.
    The probe confirms it.") and word counts do not. Denied: where it has a negating word. A plain statement of a case
    the model never learned is left to the rules ("the README documents 42" reads like a report)."""
    if stance == "denied":
        return any(negations(statement))
    if stance in ("attributed", "hypothesised") and endorses(statement):
        return False
    return cued(statement) or (p >= stance_model.VETO_UNCUED_FROM and stance_model.knows(rubric))


def _last_denials(rubric: Rubric, read: Sequence[Any], taken_back: Sequence[Any]) -> dict[str, Assertion]:
    """Per required concept, its latest match read as denied (in any view), where it has one."""
    latest = {c.name: _stances(c, read, taken_back, wrong=False, latest=True) for c in rubric.concepts}
    return {name: found["denied"] for name, found in latest.items() if "denied" in found}


def _stances(
    concept: Concept, read: Sequence[Any], taken_back: Sequence[Any], *, wrong: bool, latest: bool = False
) -> dict[str, Assertion]:
    """Per stance, the earliest match of ``concept`` that reads so, in any view (``latest``: the latest)."""

    def live(a: Assertion) -> bool:
        return not withdrawn(a, taken_back, wrong=wrong)

    def kept(a: Assertion) -> bool:
        return not withdrawn(a, taken_back, wrong=wrong, later=True)

    found: dict[str, Assertion] = {}
    for view in read:
        for stance, at in stances(concept.phrasings, view, wrong=wrong, live=live, kept=kept, latest=latest).items():
            key, best = (at.start, -at.end), found.get(stance)
            if best is None or (key > (best.start, -best.end) if latest else key < (best.start, -best.end)):
                found[stance] = at
    return found


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
    """Verdicts on ``statements`` (in order), each cached by (statement text, rubric, judge and the
    judges' code, :func:`code_digest`);
    an undecided verdict is not cached, so it is asked again next time."""
    folder = cache_dir or home() / "judgements"
    verdicts = []
    for text in statements:
        key = bytes_digest(
            json.dumps([JUDGE_CACHE_VERSION, code_digest(), judge.identity, rubric.digest, text]).encode("utf-8")
        )
        path = folder / f"{key}.json"
        verdict = _cached(path)
        if verdict is None:
            verdict = judge.judge(text, rubric)
            if verdict.correct is not None:
                _store(path, verdict)
        verdicts.append(verdict)
    return verdicts


def _store(path: Path, verdict: Verdict) -> None:
    """Cache ``verdict`` at ``path`` atomically: each writer fills its own temporary file, so processes and
    threads judging the same statement at once never trip over one another; a cache that cannot be written
    costs a re-judgement later, never the verdict."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, partial = tempfile.mkstemp(dir=path.parent, prefix=path.stem, suffix=".tmp")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as out:
                out.write(json.dumps(verdict.to_json()))
            os.replace(partial, path)
        except BaseException:
            Path(partial).unlink(missing_ok=True)
            raise
    except OSError:
        pass


def _cached(path: Path) -> Verdict | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or not isinstance(data.get("correct"), bool):
        return None
    try:
        return Verdict.from_json(data)
    except (KeyError, TypeError, ValueError):
        return None  # a record from another version of the judges: judged again
