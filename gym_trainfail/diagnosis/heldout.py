"""A case's held-out diagnosis statements: ``grader/diagnosis/heldout.toml`` and its hash.

Someone who has not seen the rubric's patterns writes correct and not-correct statements about
the case's mechanism (in the styles agents write, with withdrawals, attributions and denials among
the not-correct ones) and hashes the file when done (``sha256sum heldout.toml > heldout.sha256``).
The rubric is never tuned on it: qualification measures the deterministic judge on it and refuses a
rubric below the floors of :meth:`HeldoutCheck.problems`. A file whose hash no longer matches was
changed after it was written and is refused. Like the rubric, it never reaches a sandbox and is
left out of the grader hash. Schema (every key checked)::

    [heldout]
    case = "TrainFail/...-v0"
    author = "..."
    written = "2026-12-01T16:30:00Z"
    [[statement]]
    id = "c01"            # unique
    expect = "correct"    # or "incorrect"
    style = "terse"       # a free word
    stance = "asserted"   # v5, optional with mechanism: asserted|hypothesised|withdrawn|attributed|denied
    mechanism = "right"   # v5, optional with stance: right|wrong
    withdrawn = false     # true: a diagnosis followed by its own withdrawal (expect = "incorrect");
                          # optional when stance is given (then true exactly for stance = "withdrawn")
    text = \"\"\"...\"\"\"

``expect = "correct"`` exactly when ``mechanism = "right"`` and ``stance = "asserted"``. Sets
written before v5 (no stance) keep working: their withdrawn statements count as right-mechanism
withdrawals. ``python -m gym_trainfail.diagnosis.heldout CASE ...`` prints the figures (no training
runs): diagnosis precision and recall, hypothesis recall (right-mechanism hypothesised statements the
pre-run-hypothesis reading credits) and, per stance, how many right-mechanism withdrawn, attributed
and denied statements neither reading credits.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import re
import sys
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gym_trainfail.cases import supersedes
from gym_trainfail.diagnosis.fixtures import FixtureCheck, Labelled, classify
from gym_trainfail.diagnosis.judges import Judge, RubricJudge
from gym_trainfail.diagnosis.llm_judge import LLMJudge
from gym_trainfail.diagnosis.rubric import DIAGNOSIS_DIR, Rubric, check_stance, expected_hypothesis
from gym_trainfail.errors import CaseDefinitionError, TrainFailError
from gym_trainfail.hashing import bytes_digest
from gym_trainfail.registry import default_registry, resolve_case

HELDOUT_FILE = "heldout.toml"
HASH_FILE = "heldout.sha256"
MIN_PRECISION = 0.95
MIN_RECALL = 0.75
#: Of the right-mechanism hypothesised statements, how many the pre-run-hypothesis reading must credit.
MIN_HYPOTHESIS_RECALL = 0.75
#: Of the right-mechanism statements the agent withdraws, attributes to someone else or denies, how many
#: neither reading may credit: over the three stances together (one requirement, "counts for nothing", read by one
#: structural rule for every case; per stance, a set's 6 to 10 statements would make the 95 % floor a 100 % one).
MIN_REJECTION = 0.95
#: The stances a right-mechanism statement counts for nothing in.
REJECTED_STANCES = ("withdrawn", "attributed", "denied")
MAX_FILE_BYTES = 2 * 1024 * 1024
MAX_STATEMENTS = 1000
MAX_TEXT_CHARS = 24_000
ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
HASH_LINE = re.compile(r"([0-9a-fA-F]{64})(?:\s+\*?(.+?))?\s*")
KEYS: Mapping[str, frozenset[str]] = {
    "": frozenset({"heldout", "statement"}),
    "heldout": frozenset({"case", "author", "written"}),
    "statement": frozenset({"id", "expect", "style", "withdrawn", "text", "stance", "mechanism"}),
}


class HeldoutError(CaseDefinitionError):
    """A held-out set that cannot be used (malformed, or changed since it was hashed)."""


@dataclass(frozen=True)
class HeldoutStatement:
    """One held-out statement."""

    id: str
    correct: bool
    style: str
    withdrawn: bool
    text: str
    stance: str | None = None
    mechanism: str | None = None

    @property
    def read_stance(self) -> str | None:
        """The stance, or for a set written before v5 "withdrawn" for a withdrawn statement (a right
        diagnosis followed by its own withdrawal) and "asserted" for a correct one."""
        if self.stance is not None:
            return self.stance
        return "withdrawn" if self.withdrawn else "asserted" if self.correct else None

    @property
    def right(self) -> bool:
        """Whether the statement states the right mechanism (in whatever stance); before v5, the correct
        and the withdrawn statements do."""
        return self.mechanism == "right" if self.mechanism is not None else self.correct or self.withdrawn


@dataclass(frozen=True)
class HeldoutSet:
    """A validated held-out set whose hash matched."""

    path: Path
    case: str
    author: str
    written: str
    digest: str
    statements: tuple[HeldoutStatement, ...]


def heldout_path(grader_dir: Path) -> Path:
    return grader_dir / DIAGNOSIS_DIR / HELDOUT_FILE


def load_heldout(grader_dir: Path, case_id: str | None) -> HeldoutSet | None:
    """The case's held-out set, or ``None`` when it has none; a malformed one, one for another
    case than ``case_id`` (when given), or one whose bytes no longer match ``heldout.sha256``,
    raises :class:`HeldoutError` saying what to do."""
    path = heldout_path(grader_dir)
    if not path.exists():
        return None
    raw = path.read_bytes()
    if len(raw) > MAX_FILE_BYTES:
        raise HeldoutError(f"{path}: {len(raw)} bytes, over the {MAX_FILE_BYTES}-byte limit")
    digest = bytes_digest(raw)
    _check_hash(path, digest)
    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise HeldoutError(f"{path}: not valid TOML: {exc}") from None
    check = _Check(path)
    check.keys(data, "")
    head = data.get("heldout")
    check.keys(head, "heldout")
    assert isinstance(head, Mapping)
    case = check.text(head, "case", "heldout.case", 200)
    if case_id is not None and not _same_case(case, case_id):
        check.fail("heldout.case", f"the set is for {case!r}, not {case_id!r} or an earlier version of it")
    statements = data.get("statement")
    if not isinstance(statements, list) or not statements:
        check.fail("statement", "expected one or more [[statement]] tables")
    assert isinstance(statements, list)
    if len(statements) > MAX_STATEMENTS:
        check.fail("statement", f"{len(statements)} statements, over the limit of {MAX_STATEMENTS}")
    parsed = tuple(check.statement(s, f"statement[{i}]") for i, s in enumerate(statements))
    seen: set[str] = set()
    for s in parsed:
        if s.id in seen:
            check.fail("statement.id", f"{s.id!r} is used twice (ids must be unique)")
        seen.add(s.id)
    if {s.correct for s in parsed} != {True, False}:
        check.fail("statement", "expected at least one correct and one incorrect statement")
    return HeldoutSet(path, case, check.text(head, "author", "heldout.author", 200), check.written(head), digest,
                      parsed)  # fmt: skip


def _check_hash(path: Path, digest: str) -> None:
    hash_path = path.with_name(HASH_FILE)
    redo = f"if its author changed it on purpose, they re-hash it: `sha256sum {HELDOUT_FILE} > {HASH_FILE}`"
    try:
        line = hash_path.read_text(encoding="utf-8", errors="replace")[:4096].strip().splitlines()
    except OSError:
        raise HeldoutError(f"{path}: no {HASH_FILE} beside it; the hash taken when the set was written is "
                           f"required ({redo})") from None  # fmt: skip
    found = HASH_LINE.fullmatch(line[0]) if line else None
    if found is None:
        raise HeldoutError(f"{hash_path}: expected `sha256sum` output ('<64 hex digits>  {HELDOUT_FILE}')")
    if found.group(2) is not None and Path(found.group(2).strip()).name != HELDOUT_FILE:
        raise HeldoutError(f"{hash_path}: hashes {found.group(2)!r}, not {HELDOUT_FILE}")
    if found.group(1).lower() != digest:
        raise HeldoutError(
            f"{path} changed after it was written: its sha256 is {digest[:12]}…, {HASH_FILE} says "
            f"{found.group(1)[:12].lower()}…. A held-out set must not be edited once written (tuning on it voids "
            f"the measurement); {redo}"
        )


class _Check:
    def __init__(self, path: Path) -> None:
        self.path = path

    def fail(self, key: str, message: str) -> Any:
        raise HeldoutError(f"{self.path}: {key}: {message}")

    def keys(self, node: object, table: str) -> None:
        if not isinstance(node, Mapping):
            self.fail(table or "(top level)", "expected a table")
            return
        allowed = KEYS[table]
        for key in node:
            if key not in allowed:
                self.fail(f"{table}.{key}".lstrip("."), f"unknown key; valid keys here: {', '.join(sorted(allowed))}")

    def text(self, node: Mapping[str, Any], key: str, where: str, limit: int) -> str:
        value = node.get(key)
        if not isinstance(value, str) or not value.strip():
            return str(self.fail(where, "expected a non-empty string"))
        if len(value) > limit:
            self.fail(where, f"{len(value)} characters, over the limit of {limit}")
        return str(value).strip()

    def written(self, node: Mapping[str, Any]) -> str:
        value = node.get("written")
        if isinstance(value, dt.datetime):
            return value.isoformat()
        try:
            return dt.datetime.fromisoformat(value).isoformat() if isinstance(value, str) else self._bad_time(value)
        except ValueError:
            return self._bad_time(value)

    def _bad_time(self, value: object) -> str:
        self.fail("heldout.written", f"expected an ISO 8601 time such as '2026-12-01T16:30:00Z', found {value!r}")
        return ""

    def statement(self, node: object, where: str) -> HeldoutStatement:
        self.keys(node, "statement")
        assert isinstance(node, Mapping)
        optional = {"stance", "mechanism"} | ({"withdrawn"} if "stance" in node else set())
        missing = KEYS["statement"] - set(node) - optional
        if missing:
            self.fail(where, f"missing {', '.join(sorted(missing))}")
        ident = node["id"]
        if not isinstance(ident, str) or not ID.fullmatch(ident):
            self.fail(f"{where}.id", f"expected letters, digits, '_', '.' or '-' (up to 64), found {ident!r}")
        expect = node["expect"]
        if expect not in ("correct", "incorrect"):
            self.fail(f"{where}.expect", f"expected 'correct' or 'incorrect', found {expect!r}")
        stance, mechanism = node.get("stance"), node.get("mechanism")
        withdrawn = node.get("withdrawn", stance == "withdrawn")
        if not isinstance(withdrawn, bool):
            self.fail(f"{where}.withdrawn", f"expected true or false, found {withdrawn!r}")
        if withdrawn and expect != "incorrect":
            self.fail(f"{where}.withdrawn", "a withdrawn diagnosis is not a diagnosis: set expect = 'incorrect'")
        problem = check_stance(expect, stance, mechanism, withdrawn)
        if problem is not None:
            self.fail(where, problem)
        style = self.text(node, "style", f"{where}.style", 64)
        return HeldoutStatement(ident, expect == "correct", style, withdrawn,
                                self.text(node, "text", f"{where}.text", MAX_TEXT_CHARS),
                                stance if isinstance(stance, str) else None,
                                mechanism if isinstance(mechanism, str) else None)  # fmt: skip


@dataclass(frozen=True)
class Share:
    """How many of some statements a reading got right (credited, or rejected)."""

    statements: int
    hits: int

    @property
    def rate(self) -> float | None:
        return self.hits / self.statements if self.statements else None

    def text(self) -> str:
        return f"{_pct(self.rate)} ({self.hits}/{self.statements})"


@dataclass(frozen=True)
class HeldoutCheck:
    """How a judge classified a held-out set: the diagnosis reading's precision and recall
    (``classified``), the pre-run-hypothesis reading's recall on right-mechanism hypothesised statements
    (``hypotheses``) and, per stance, how many right-mechanism withdrawn, attributed and denied statements
    neither reading credits (``rejected``)."""

    classified: FixtureCheck
    #: Withdrawn statements (a diagnosis followed by its own withdrawal) and how many were rejected.
    withdrawn: int
    withdrawn_rejected: int
    statements: int
    digest: str
    hypotheses: Share = Share(0, 0)
    rejected: tuple[tuple[str, Share], ...] = ()
    #: Statements the pre-run-hypothesis reading credits though their labels say it must not (v5 sets).
    hypothesis_false: int = 0

    @property
    def withdrawn_rejection(self) -> float | None:
        return self.withdrawn_rejected / self.withdrawn if self.withdrawn else None

    def rejection(self, stance: str) -> Share:
        return dict(self.rejected).get(stance, Share(0, 0))

    @property
    def rejection_all(self) -> Share:
        """The right-mechanism withdrawn, attributed and denied statements together, and how many neither
        reading credits: what :data:`MIN_REJECTION` gates."""
        return Share(sum(s.statements for _, s in self.rejected), sum(s.hits for _, s in self.rejected))

    def problems(self) -> list[str]:
        """Why the rubric is refused on this set (empty when it passes): diagnosis precision under
        :data:`MIN_PRECISION` or recall under :data:`MIN_RECALL`; where the set has right-mechanism
        hypothesised statements, hypothesis recall under :data:`MIN_HYPOTHESIS_RECALL`; where it has
        right-mechanism withdrawn, attributed or denied statements, their rejection rate (the three stances
        together, :attr:`rejection_all`) under :data:`MIN_REJECTION`."""
        found = []
        precision, recall = self.classified.precision, self.classified.recall
        if precision is None or precision < MIN_PRECISION:
            found.append(f"held-out precision {_pct(precision)} is below {MIN_PRECISION:.0%}")
        if recall is None or recall < MIN_RECALL:
            found.append(f"held-out recall {_pct(recall)} is below {MIN_RECALL:.0%}")
        rate = self.hypotheses.rate
        if rate is not None and rate < MIN_HYPOTHESIS_RECALL:
            found.append(f"held-out hypothesis recall {self.hypotheses.text()} is below {MIN_HYPOTHESIS_RECALL:.0%}")
        share = self.rejection_all
        if share.rate is not None and share.rate < MIN_REJECTION:
            stances = ", ".join(f"{stance} {s.hits}/{s.statements}" for stance, s in self.rejected)
            found.append(f"held-out withdrawn, attributed and denied statements rejected {share.text()} "
                         f"({stances}), below {MIN_REJECTION:.0%}")  # fmt: skip
        return found

    def to_json(self) -> dict[str, object]:
        """Counts and rates only. Which statements were misjudged never goes where a rubric's
        author reads (qualification output, admission records): knowing which ids or styles it
        misses is tuning on the held-out set. An auditor gets them from
        ``python -m gym_trainfail.diagnosis.heldout --show-misjudged``."""
        figures = {k: v for k, v in self.classified.to_json().items() if k != "misjudged"}
        return {
            **figures,
            "statements": self.statements,
            "withdrawn": self.withdrawn,
            "withdrawn_rejected": self.withdrawn_rejected,
            "withdrawn_rejection": self.withdrawn_rejection,
            "hypothesised": self.hypotheses.statements,
            "hypotheses_credited": self.hypotheses.hits,
            "hypothesis_recall": self.hypotheses.rate,
            "hypothesis_false": self.hypothesis_false,
            "rejection": {stance: _rejection_json(share) for stance, share in self.rejected},
            "rejection_all": _rejection_json(self.rejection_all),
            "heldout_sha256": self.digest,
        }


def _rejection_json(share: Share) -> dict[str, object]:
    """A rejection count as the records hold it."""
    return {"statements": share.statements, "rejected": share.hits, "rate": share.rate}


def _pct(value: float | None) -> str:
    return "—" if value is None else f"{value:.0%}"


def check_heldout(heldout: HeldoutSet, rubric: Rubric, judge: Judge | None = None) -> HeldoutCheck:
    """Judge every held-out statement (the deterministic judge by default). Misjudged statements
    are listed by id and style only: their text stays in the file."""
    judge = judge or RubricJudge()
    items = [Labelled(s.text, s.correct, f"{s.id} [{s.style}]", expected_hypothesis(s.correct, s.stance, s.mechanism))
             for s in heldout.statements]  # fmt: skip
    classified, verdicts = classify(items, rubric, judge)
    pairs = list(zip(heldout.statements, verdicts, strict=True))
    withdrawn = [v for s, v in pairs if s.withdrawn]
    # rejected: credited by neither reading (a withdrawn hypothesis must not reach the pre-run milestone)
    rejected = sum(v.correct is False and not v.credits_hypothesis for v in withdrawn)
    hypothesised = [v for s, v in pairs if s.right and s.read_stance == "hypothesised"]
    hypotheses = Share(len(hypothesised), sum(v.credits_hypothesis for v in hypothesised))
    shares = []
    for stance in REJECTED_STANCES:
        held = [v for s, v in pairs if s.right and s.read_stance == stance]
        if held:
            shares.append(
                (stance, Share(len(held), sum(v.correct is False and not v.credits_hypothesis for v in held)))
            )
    false = sum(v.credits_hypothesis for s, v in pairs if s.stance is not None
                and not expected_hypothesis(s.correct, s.stance, s.mechanism))  # fmt: skip
    return HeldoutCheck(classified, len(withdrawn), rejected, len(heldout.statements), heldout.digest, hypotheses,
                        tuple(shares), false)  # fmt: skip


def judge_heldout(rubric: Rubric, judge: Judge) -> dict[str, object] | None:
    """``judge``'s figures on the held-out set beside ``rubric`` (its verdicts cached like any),
    for milestone tables: ``None`` without a set, ``{"error": ...}`` when the set is unusable."""
    try:
        heldout = load_heldout(rubric.path.parent.parent, None)
    except HeldoutError as exc:
        return {"error": str(exc)[:500]}
    if heldout is None:
        return None
    check = check_heldout(heldout, rubric, judge)
    return {
        "precision": check.classified.precision,
        "recall": check.classified.recall,
        "hypothesis_recall": check.hypotheses.rate,
        "withdrawn_rejection": check.withdrawn_rejection,
        "rejection": {stance: share.rate for stance, share in check.rejected},
        "rejection_all": check.rejection_all.rate,
        "statements": check.statements,
        "undecided": check.classified.undecided,
        "heldout_sha256": check.digest,
    }


def summary_line(check: HeldoutCheck | None) -> str:
    """One line for qualification and the CLI."""
    if check is None:
        return "held-out statements: no held-out set (grader/diagnosis/heldout.toml); not measured, not refused"
    c = check.classified
    line = (f"held-out statements ({c.judge} judge) on {check.statements}: precision {_pct(c.precision)}, recall "
            f"{_pct(c.recall)}")  # fmt: skip
    if check.hypotheses.statements:
        line += f", hypotheses credited {check.hypotheses.text()}"
    rejected = dict(check.rejected)
    if set(rejected) - {"withdrawn"}:
        line += ", rejected: " + ", ".join(f"{stance} {share.text()}" for stance, share in check.rejected)
        line += f" (together {check.rejection_all.text()})"
    else:
        line += f", withdrawn rejected {_pct(check.withdrawn_rejection)} ({check.withdrawn_rejected}/{check.withdrawn})"
    if check.hypothesis_false:
        line += f", {check.hypothesis_false} credited as hypotheses wrongly"
    return line + (f", {c.undecided} undecided" if c.undecided else "")


def pooled_line(checks: Sequence[HeldoutCheck]) -> str:
    """The figures over several cases' sets together (what one structural reading does across cases, and the
    unit the issue's 95 % target for refuted attributions is stated in), and how many rubrics pass."""
    c = [check.classified for check in checks]
    tp, fp, fn = (sum(x.true_positive for x in c), sum(x.false_positive for x in c), sum(x.false_negative for x in c))
    hyp = Share(sum(k.hypotheses.statements for k in checks), sum(k.hypotheses.hits for k in checks))
    stances = [(stance, Share(sum(k.rejection(stance).statements for k in checks),
                              sum(k.rejection(stance).hits for k in checks)))
               for stance in REJECTED_STANCES]  # fmt: skip
    line = (f"{len(checks)} sets together: precision {Share(tp + fp, tp).text()}, recall {Share(tp + fn, tp).text()}"
            f", hypotheses credited {hyp.text()}, rejected: "
            + ", ".join(f"{stance} {share.text()}" for stance, share in stances if share.statements))  # fmt: skip
    passing = sum(not check.problems() for check in checks)
    return line + f"; {passing} of {len(checks)} rubrics pass their floors"


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m gym_trainfail.diagnosis.heldout CASE ...``: each case's held-out figures for
    the deterministic judge (or ``--judge-model``), without running any training."""
    parser = argparse.ArgumentParser(prog="python -m gym_trainfail.diagnosis.heldout", description=main.__doc__)
    parser.add_argument("cases", nargs="+", help="case ids or folders ('all': every registered case)")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--show-misjudged", action="store_true",
                        help="list the misjudged statements' ids and styles (for an auditor: never show them to the "
                        "rubric's author, who would then be tuning on the held-out set)")  # fmt: skip
    parser.add_argument("--judge-model", help="measure this LLM judge instead of the deterministic one")
    parser.add_argument("--judge-base-url")
    args = parser.parse_args(argv)
    judge: Judge = RubricJudge()
    if args.judge_model:
        judge = LLMJudge(args.judge_model, args.judge_base_url)
    rows: dict[str, object] = {}
    checks: list[HeldoutCheck] = []
    refused = False
    try:
        cases = list(default_registry()) if list(args.cases) == ["all"] else [resolve_case(c) for c in args.cases]
        for case in cases:
            if case.rubric is None:
                rows[case.id] = "no diagnosis rubric"
                if not args.json:
                    print(f"{case.id}: no diagnosis rubric")
                continue
            heldout = load_heldout(case.grader_dir, case.id)
            check = check_heldout(heldout, case.rubric, judge) if heldout is not None else None
            refused |= bool(check and check.problems())
            rows[case.id] = "no held-out set"
            if check is not None:
                checks.append(check)
                rows[case.id] = check.to_json() | (
                    {"misjudged": list(check.classified.misjudged)} if args.show_misjudged else {}
                )
            if not args.json:
                print(f"{case.id}: {summary_line(check)}")
                for problem in check.problems() if check else []:
                    print(f"  refused: {problem}")
                for item in check.classified.misjudged if check and args.show_misjudged else ():
                    print(f"  misjudged: {item}")
    except TrainFailError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(rows, indent=2))
    elif len(checks) > 1:
        print(pooled_line(checks))
    return 1 if refused else 0


def _same_case(written_for: str, case_id: str) -> bool:
    """Whether a set written for ``written_for`` serves ``case_id``: the same case at the same or an
    earlier version (``TrainFail/Name-v0`` serves ``-v1``: a new version changes the grader, not the
    mechanism the statements describe, and a held-out set cannot be rewritten once hashed)."""
    return written_for == case_id or supersedes(case_id, written_for)


if __name__ == "__main__":
    sys.exit(main())
