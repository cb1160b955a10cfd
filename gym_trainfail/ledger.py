"""The episode ledger: append-only JSONL, flushed per event.

Only the host writes events. Every event has ``event`` (its kind) and ``t`` (wall-clock seconds
since the epoch). Kinds:

``reset``       case, arm, sandbox, seed — the episode starts
``step``        index, tool, arguments, start, end, status (``ok`` / ``error``), exit code;
                string arguments over 16,000 characters are a preview, with ``elided`` giving
                their size and SHA-256 (:mod:`gym_trainfail.call_records`)
``tokens``      input, output, cached_input (input includes cached), estimated
``message``     role, kind (``message`` / ``reasoning``), text, step — what the agent loop says
                the agent said (``record_message``); read only by :mod:`gym_trainfail.diagnosis`,
                never by the reward; text over 64,000 characters is cut (``chars``: its size)
``device``      devices, kind, ids, queued_at, started_at, released_at, device_seconds, role
``submit``      revision, tree
``suspension``  start, end, reason — time the episode was not running (provider waits, crashes)
``sandbox``     what happened to the sandbox (lost, restored)
``audit``       step, tool, source, report — what was seen of the arm's withheld or measured tool
                (TrainCheck use, blocked attempts, mentions); see below
``interrupted`` step, tool — a call the server stopped at its second SIGTERM/SIGINT (it never gets
                a ``step`` event: a resume restores the last completed step's checkpoint)
``finish``      reason (``finish``, ``budget:<name>``, ``reset``, ``close``, ``interrupted``)

``audit`` events are the only kind that carries what came out of a sandbox, and nothing reads
them as any other kind. ``source`` says who saw it: ``watch`` (the host's inotify watch on its
private copies of the arm's files: ``report`` = type ``access``, target, access, count, paths),
``hook`` (the arm's hooks inside the sandbox over the audit channel: a schema-checked report of
type ``blocked`` or ``usage``, see :mod:`gym_trainfail.sandbox.audit`; the agent could forge
one, never another kind of event) or ``call`` (the host's scan of tool calls: type ``mention``).
Lines on the audit channel that fail the schema are dropped and counted in the step event
(``forged_audit_records``).

:func:`summarize` derives raw and adjusted wall time, tokens and device-seconds, optionally
up to a point in the episode (the first valid revision). It reads only host events and never
goes negative: a malformed or negative value counts as nothing.
"""

from __future__ import annotations

import json
import math
import os
import time
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, TextIO

Event = dict[str, Any]


class Ledger:
    """Appends events to ``path``. Each event is flushed to the OS before ``append`` returns, so a
    crash of this process loses nothing recorded; the file is fsynced when the ledger closes."""

    def __init__(self, path: Path) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        self._handle: TextIO | None = path.open("a", encoding="utf-8")

    def append(self, event: str, **fields: Any) -> Event:
        """Record one event and return it."""
        record: Event = {"event": event, "t": fields.pop("t", time.time()), **fields}
        if self._handle is None:
            raise ValueError(f"ledger {self.path} is closed")
        self._handle.write(json.dumps(record, sort_keys=True, default=str) + "\n")
        self._handle.flush()
        return record

    def close(self) -> None:
        if self._handle is not None:
            self._handle.flush()
            os.fsync(self._handle.fileno())
            self._handle.close()
            self._handle = None


def read_events(path: Path) -> list[Event]:
    """All events of a ledger. A torn last line (a crash mid-write) is skipped."""
    events = []
    with path.open(encoding="utf-8") as handle:
        for line in handle:
            line = line.strip()
            if not line:
                continue
            try:
                events.append(json.loads(line))
            except json.JSONDecodeError:
                continue
    return events


@dataclass(frozen=True)
class Summary:
    """Derived accounting of an episode (or of its prefix up to ``until``)."""

    raw_seconds: float
    adjusted_seconds: float
    queue_wait_seconds: float
    suspended_seconds: float
    input_tokens: int
    output_tokens: int
    cached_input_tokens: int
    tokens_estimated: bool
    solver_device_seconds: float
    grader_device_seconds: float
    steps: int
    submits: int

    @property
    def total_tokens(self) -> int:
        """Input + output; cached input is part of input and is counted once."""
        return self.input_tokens + self.output_tokens

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["total_tokens"] = self.total_tokens
        return data


def _number(value: object) -> float | None:
    """A finite number, or ``None`` (bools, strings, NaN and infinities are not numbers here)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) else None


def _count(value: object) -> int:
    """A non-negative whole count; anything else counts as 0."""
    number = _number(value)
    return int(number) if number is not None and number > 0 else 0


def _overlap(start: float, end: float, until: float) -> float:
    return max(0.0, min(end, until) - start)


def _window(event: Mapping[str, Any], first: str, second: str) -> tuple[float, float] | None:
    """``(event[first], event[second])`` when both are numbers in order, else ``None``."""
    start, end = _number(event.get(first)), _number(event.get(second))
    if start is None or end is None or end < start:
        return None
    return start, end


def summarize(events: Iterable[Mapping[str, Any]], until: float | None = None) -> Summary:
    """Accounting of ``events`` up to wall time ``until`` (the whole episode when ``None``).

    Adjusted time = raw − device-queue waits − suspensions, each clipped to the window.
    Device-seconds of a job count only once it was released inside the window. Events without a
    valid time, and values that are not non-negative numbers, are ignored.
    """
    events = [e for e in events if _number(e.get("t")) is not None]
    starts = [float(e["t"]) for e in events if e.get("event") == "reset"]
    start = starts[0] if starts else (float(events[0]["t"]) if events else 0.0)
    if until is None:
        finishes = [float(e["t"]) for e in events if e.get("event") == "finish"]
        until = finishes[-1] if finishes else max((_event_end(e) for e in events), default=start)
    queue = suspended = solver = grader = 0.0
    tokens_in = tokens_out = tokens_cached = steps = submits = 0
    estimated = False
    for e in events:
        kind = e.get("event")
        if kind == "device" and _number(e.get("started_at")) is not None:
            released = _number(e.get("released_at"))
            seconds = max(0.0, _number(e.get("device_seconds")) or 0.0)
            counted = seconds if released is not None and released <= until else 0.0
            if e.get("role", "solver") == "grader":
                grader += counted
                continue
            waited = _window(e, "queued_at", "started_at")
            queue += _overlap(*waited, until) if waited is not None else 0.0
            solver += counted
        elif kind == "suspension" and (window := _window(e, "start", "end")) is not None:
            suspended += _overlap(*window, until)
        elif float(e["t"]) > until:
            continue
        elif kind == "tokens":
            tokens_in += _count(e.get("input", 0))
            tokens_out += _count(e.get("output", 0))
            tokens_cached += _count(e.get("cached_input", 0))
            estimated = estimated or bool(e.get("estimated", False))
        elif kind == "step":
            steps += 1
        elif kind == "submit":
            submits += 1
    raw = max(0.0, until - start)
    return Summary(
        raw_seconds=raw,
        adjusted_seconds=max(0.0, raw - queue - suspended),
        queue_wait_seconds=queue,
        suspended_seconds=suspended,
        input_tokens=tokens_in,
        output_tokens=tokens_out,
        cached_input_tokens=min(tokens_cached, tokens_in),
        tokens_estimated=estimated,
        solver_device_seconds=solver,
        grader_device_seconds=grader,
        steps=steps,
        submits=submits,
    )


def _event_end(event: Mapping[str, Any]) -> float:
    for key in ("end", "released_at"):
        if (value := _number(event.get(key))) is not None:
            return value
    return float(event["t"])


def iter_kind(events: Iterable[Event], kind: str) -> Iterator[Event]:
    """Events of one kind, in order."""
    return (e for e in events if e.get("event") == kind)
