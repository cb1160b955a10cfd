"""How far an agent engaged with the optional tool (TrainCheck) in the treatment arm, as an
ordered level::

    none < manual (read the manual) < prepared (imported it, or wrote a config or invariants)
         < activated (ran collection, inference or checking) < acted (edited after a violation)

Read from the ledger's ``audit`` events (the host's watch and the arm's hooks, see
:mod:`gym_trainfail.arms`) and the transcript: a manual read through any tool counts (``cat``,
``grep``, an editor), since the host watches the file, not the command.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from gym_trainfail.arms import audit_category
from gym_trainfail.diagnosis.evidence import Evidence
from gym_trainfail.ledger import Event, iter_kind

LEVELS = ("none", "manual", "prepared", "activated", "acted")
#: Module or command names of TrainCheck's three activities (collection, inference, checking).
ACTIVITY = re.compile(r"collect|infer|check", re.IGNORECASE)
#: A checker's report of violated invariants (not "0 violations" / "no violations").
VIOLATION = re.compile(r"violat\w*|failed invariants?", re.IGNORECASE)
NO_VIOLATION = re.compile(r"\b(?:0|no|zero)\s+(?:invariant\s+)?violat\w*", re.IGNORECASE)
EDIT_TOOLS = ("write_file", "edit_file")


def engagement(events: Sequence[Event], evidence: Evidence) -> dict[str, Any]:
    """``{"level", "rank", "evidence"}``: the highest level reached and the first step of each."""
    first: dict[str, int] = {}
    activating: set[int] = set()
    for event in iter_kind(events, "audit"):
        level = _level(event)
        step = event.get("step")
        if level is None or not isinstance(step, int):
            continue
        first.setdefault(level, step)
        if level == "activated":
            activating.add(step)
    if activating:
        flagged = [s.index for s in evidence.steps if s.index in activating and _reports_violation(s.observation)]
        if flagged:
            edit = next((s.index for s in evidence.steps if s.tool in EDIT_TOOLS and s.index > flagged[0]), None)
            if edit is not None:
                first["acted"] = edit
    rank = max((LEVELS.index(level) for level in first), default=0)
    steps = {level: first[level] for level in LEVELS if level in first}
    return {"level": LEVELS[rank], "rank": rank, "evidence": steps}


def _level(event: Mapping[str, Any]) -> str | None:
    category = audit_category(event)
    report = event.get("report") or {}
    if category == "manual":
        return "manual"
    if category == "mention" and report.get("argument") in ("content", "new_text"):
        return "prepared"  # wrote a TrainCheck config, invariants or instrumentation into the workspace
    if category != "traincheck":
        return None
    if report.get("type") == "usage":
        detail = str(report.get("detail", ""))
        if report.get("kind") == "command" or ACTIVITY.search(detail.partition(".")[2]):
            return "activated"
        return "prepared"
    return "activated" if report.get("target") == "command" else "prepared"


def _reports_violation(text: str) -> bool:
    return bool(VIOLATION.search(NO_VIOLATION.sub("", text)))
