"""What a sandbox may report on its audit channel: a closed, typed schema, checked on the host.

The audit channel is written by code running in the agent's processes (the control arm's
blocker, the treatment arm's usage tracker), so anything on it may be forged. The host keeps
only records of the schema below, with exactly these fields, these types and these lengths;
every other line is dropped and counted. Kept records become ``audit`` ledger events (their
``report`` field), never events of another kind: a sandbox cannot write steps, tokens, device
allocations, submits, suspensions or finishes.

One record per line, a JSON object::

    {"type": "blocked", "kind": "import" | "open" | "command", "detail": str, "argv": [str], "pid": int}
    {"type": "usage",   "kind": "import" | "command",          "detail": str, "argv": [str], "pid": int}
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

#: Report type → the kinds it may carry.
KINDS: Mapping[str, frozenset[str]] = {
    "blocked": frozenset({"import", "open", "command"}),
    "usage": frozenset({"import", "command"}),
}
FIELDS = frozenset({"type", "kind", "detail", "argv", "pid"})
MAX_LINE_BYTES = 8192
MAX_DETAIL = 300
MAX_ARG = 200
MAX_ARGS = 12
MAX_PID = 1 << 22  # the kernel's pid_max ceiling
#: Records kept per command; the hooks report each (kind, detail) once per process.
MAX_RECORDS = 64


@dataclass(frozen=True)
class AuditReports:
    """The valid records of one command and how many lines were dropped."""

    records: tuple[dict[str, Any], ...] = ()
    #: Lines that were not a valid record (or valid records beyond :data:`MAX_RECORDS`).
    rejected: int = 0


def validate(value: object) -> dict[str, Any] | None:
    """``value`` as a report of the schema, or ``None`` if it is not exactly one."""
    if not isinstance(value, dict) or set(value) != FIELDS:
        return None
    kind, detail, argv, pid = value["kind"], value["detail"], value["argv"], value["pid"]
    if not isinstance(value["type"], str) or kind not in KINDS.get(value["type"], ()):
        return None
    if not isinstance(detail, str) or not detail or len(detail) > MAX_DETAIL:
        return None
    if not isinstance(argv, list) or len(argv) > MAX_ARGS:
        return None
    if not all(isinstance(a, str) and len(a) <= MAX_ARG for a in argv):
        return None
    if type(pid) is not int or not 0 < pid < MAX_PID:
        return None
    return {"type": value["type"], "kind": kind, "detail": detail, "argv": list(argv), "pid": pid}


def parse_reports(data: bytes) -> AuditReports:
    """Check every line written to an audit channel; keep the valid records, count the rest."""
    records: list[dict[str, Any]] = []
    rejected = 0
    for line in data.splitlines():
        line = line.strip()
        if not line:
            continue
        report = None
        if len(line) <= MAX_LINE_BYTES:
            try:
                report = validate(json.loads(line))
            except (ValueError, RecursionError):
                report = None
        if report is None or len(records) >= MAX_RECORDS:
            rejected += 1
        else:
            records.append(report)
    return AuditReports(tuple(records), rejected)
