"""Reading what TrainCheck wrote inside the sandbox: adversarial data, read with bounds.

``traincheck-check`` writes ``<check dir>/<trace folder>/violations_summary.json``; the
inference writes one invariant per line. Both come out of a sandbox that ran the case's own
(possibly hostile) pipeline, so they are read without following links, without blocking on
special files, within a size bound, and against a closed schema: anything else is refused
with a reason, never taken as a result.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gym_trainfail.files import read_json_object

SUMMARY_FILE = "violations_summary.json"
#: Largest summary read (a few thousand violations of a tiny run fit in well under this).
MAX_SUMMARY_BYTES = 16 << 20
#: Largest invariants file counted (lines), and most violations kept per summary.
MAX_INVARIANT_BYTES = 512 << 20
MAX_VIOLATIONS = 20_000
MAX_NAME_CHARS = 2000
SUMMARY_KEYS = frozenset({"first_violation_step", "distinct_invariants_violated", "violations"})
VIOLATION_KEYS = frozenset({"display_name", "relation_type", "first_step", "last_step", "occurrences"})
RELATION_RE = re.compile(r"^[A-Za-z][A-Za-z0-9_]{0,63}$")
#: Steps and counts a real run of a few steps can produce.
MAX_STEP = 10_000_000


class ResultError(ValueError):
    """TrainCheck's output was missing, too large or not of the expected shape."""


@dataclass(frozen=True)
class Violation:
    """One violated invariant, as the checker summarised it."""

    name: str
    relation: str
    first_step: int | None
    occurrences: int


@dataclass(frozen=True)
class CheckResult:
    """A checked trace: every violated invariant and the earliest step any broke at."""

    violations: tuple[Violation, ...]
    first_step: int | None

    @property
    def names(self) -> frozenset[tuple[str, str]]:
        """The violated invariants, by (relation, display name)."""
        return frozenset((v.relation, v.name) for v in self.violations)

    def by_relation(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for violation in self.violations:
            counts[violation.relation] = counts.get(violation.relation, 0) + 1
        return dict(sorted(counts.items()))


def _step(value: Any, where: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_STEP:
        raise ResultError(f"{where}: expected a step number or null, found {value!r}")
    return value


def parse_summary(data: Mapping[str, Any]) -> CheckResult:
    """A checker summary, validated against its closed schema."""
    extra = set(data) - SUMMARY_KEYS
    if extra or not set(data) >= SUMMARY_KEYS:
        raise ResultError(f"{SUMMARY_FILE}: expected keys {sorted(SUMMARY_KEYS)}, found {sorted(data)}")
    items = data["violations"]
    if not isinstance(items, list) or len(items) > MAX_VIOLATIONS:
        raise ResultError(f"{SUMMARY_FILE}: violations must be a list of at most {MAX_VIOLATIONS}")
    count = data["distinct_invariants_violated"]
    if isinstance(count, bool) or not isinstance(count, int) or count != len(items):
        raise ResultError(f"{SUMMARY_FILE}: distinct_invariants_violated {count!r} does not count the violations")
    violations = []
    for i, item in enumerate(items):
        where = f"{SUMMARY_FILE}: violations[{i}]"
        if not isinstance(item, dict) or set(item) != VIOLATION_KEYS:
            raise ResultError(f"{where}: expected exactly the keys {sorted(VIOLATION_KEYS)}")
        name, relation, occurrences = item["display_name"], item["relation_type"], item["occurrences"]
        if not isinstance(name, str) or not name or len(name) > MAX_NAME_CHARS:
            raise ResultError(f"{where}.display_name: expected a string of 1 to {MAX_NAME_CHARS} characters")
        if not isinstance(relation, str) or not RELATION_RE.match(relation):
            raise ResultError(f"{where}.relation_type: expected a relation class name, found {relation!r}")
        if isinstance(occurrences, bool) or not isinstance(occurrences, int) or not 1 <= occurrences <= MAX_STEP:
            raise ResultError(f"{where}.occurrences: expected a positive count, found {occurrences!r}")
        first = _step(item["first_step"], f"{where}.first_step")
        _step(item["last_step"], f"{where}.last_step")
        violations.append(Violation(name, relation, first, occurrences))
    first_step = _step(data["first_violation_step"], f"{SUMMARY_FILE}: first_violation_step")
    steps = [v.first_step for v in violations if v.first_step is not None]
    if first_step != (min(steps) if steps else None):
        raise ResultError(f"{SUMMARY_FILE}: first_violation_step {first_step!r} is not the earliest violation's step")
    return CheckResult(tuple(violations), first_step)


def read_summary(folder: Path) -> CheckResult:
    """The ``violations_summary.json`` the checker wrote into ``folder`` (one per checked trace)."""
    path = folder / SUMMARY_FILE
    if folder.is_symlink() or not os.path.lexists(path):
        raise ResultError(f"no {SUMMARY_FILE} in {folder.name}/ (the checker wrote no result for this trace)")
    data = read_json_object(path, MAX_SUMMARY_BYTES)
    if data is None:
        raise ResultError(f"{SUMMARY_FILE}: not a regular file, larger than {MAX_SUMMARY_BYTES} bytes or not JSON")
    return parse_summary(data)


def count_invariants(path: Path) -> int:
    """Invariants in an inferred file (JSON Lines: one per non-empty line)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW)
    except OSError as exc:
        raise ResultError(f"no invariants file ({exc.strerror})") from None
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_INVARIANT_BYTES:
            raise ResultError(f"the invariants file is not a regular file of at most {MAX_INVARIANT_BYTES} bytes")
        count = 0
        for line in handle:
            if line.strip():
                count += 1
        return count


def term_pattern(terms: Iterable[str]) -> re.Pattern[str] | None:
    """Whole-identifier matches of any of ``terms`` (``None`` when there are none)."""
    words = sorted({t for t in terms if t}, key=len, reverse=True)
    if not words:
        return None
    return re.compile(r"(?<![A-Za-z0-9_])(?:" + "|".join(re.escape(w) for w in words) + r")(?![A-Za-z0-9_])")


def culprit_terms(paths: Iterable[str], symbols: Iterable[str], extra: Iterable[str] = ()) -> list[str]:
    """What a violated invariant must name to point at the culprit: the culprit files as module
    names (``sft/losses.py`` → ``sft.losses``), their symbols, and the mechanism's tensors/APIs."""
    modules = [p.removesuffix(".py").replace("/", ".") for p in paths if p.endswith(".py")]
    return sorted({*modules, *symbols, *extra})


def naming(violations: Iterable[Violation], pattern: re.Pattern[str] | None) -> list[dict[str, str]]:
    """The violations whose display name names a culprit term, with the term."""
    hits: list[dict[str, str]] = []
    if pattern is None:
        return hits
    for violation in violations:
        match = pattern.search(violation.name)
        if match:
            hits.append({"term": match.group(0), "relation": violation.relation, "invariant": violation.name[:300]})
    return hits
