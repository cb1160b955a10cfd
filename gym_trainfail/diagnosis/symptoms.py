"""The private symptom detector: which of an agent's jobs showed the failure at run time.

A case's rubric names values that must agree across some key when training is right and that
differ when it shows the failure: per-rank valid-token counts (DDP), the gradient norm at a step
across tensor-parallel sizes (TP), per-rank state digests (FSDP). Each pattern is a regular
expression over a job's output with named groups ``value``, ``key`` (or a ``command_key``
regex over the job's command supplying it) and optionally ``align`` (only values with the same
``align``, e.g. the same step, are compared). A job is marked when, within it (scope ``job``)
or over it and the episode's earlier jobs (scope ``episode``), two keys gave different values
for the same alignment. Numbers differ beyond ``rtol`` (relative); other values when unequal.

The detector reads only what the host recorded (commands and the observations the agent got),
so the agent's own prints count as evidence exactly when they show the symptom.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from gym_trainfail.diagnosis.rubric import Symptom, SymptomPattern

#: Matches read from one job at most (bounded work on adversarial output).
MAX_MATCHES = 4096


@dataclass(frozen=True)
class Job:
    """One ``run_job`` the agent ran: its step, command and what it printed."""

    step: int
    command: str
    output: str
    start: float
    end: float
    devices: int = 0


@dataclass
class _Seen:
    """Values seen so far: (pattern, align) → key → value."""

    values: dict[tuple[int, str], dict[str, str | float]] = field(default_factory=dict)


@dataclass(frozen=True)
class Mark:
    """A job that showed the symptom, and the disagreeing values that did."""

    step: int
    evidence: str


def detect(symptom: Symptom, jobs: Sequence[Job]) -> list[Mark]:
    """The jobs (in order) whose output shows the symptom."""
    marks = []
    seen = _Seen()
    for job in jobs:
        if symptom.scope == "job":
            seen = _Seen()
        evidence = None
        for index, pattern in enumerate(symptom.patterns):
            for key, align, value in _observations(pattern, job):
                found = _record(seen, (index, align), key, value, pattern.rtol)
                evidence = evidence or found
        if evidence is not None:
            marks.append(Mark(job.step, evidence))
    return marks


def _observations(pattern: SymptomPattern, job: Job) -> list[tuple[str, str, str | float]]:
    command_key = None
    if pattern.command_key is not None and (match := pattern.command_key.search(job.command)):
        command_key = match.group("key")
    found = []
    for count, match in enumerate(pattern.regex.finditer(job.output)):
        if count >= MAX_MATCHES:
            break
        groups = match.groupdict()
        key = groups.get("key") or command_key
        if key is None or groups.get("value") is None:
            continue
        found.append((str(key), str(groups.get("align") or ""), _value(groups["value"])))
    return found


def _value(text: str) -> str | float:
    try:
        number = float(text)
    except ValueError:
        return text.strip()
    return number if math.isfinite(number) else text.strip()


def _record(seen: _Seen, slot: tuple[int, str], key: str, value: str | float, rtol: float) -> str | None:
    """Remember ``key``'s value; a description of the disagreement if another key differs."""
    values = seen.values.setdefault(slot, {})
    values.setdefault(key, value)
    for other, known in values.items():
        if other != key and _differ(known, value, rtol):
            at = f" at {slot[1]}" if slot[1] else ""
            return f"{other}: {known} vs {key}: {value}{at}"
    return None


def _differ(a: str | float, b: str | float, rtol: float) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return abs(a - b) > rtol * max(abs(a), abs(b))
    return str(a) != str(b)
