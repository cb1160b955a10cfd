"""Retrospective adjudication: per episode, its revisions' verdicts and what they cost.

Pure: it reads the episode's files (ledger, revisions), the batch's receipts and the runner's
status, and writes ``adjudication/<episode>.json`` plus one source map per revision. An
adjudication whose inputs have not changed is skipped. Leaderboards read only these files.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gym_trainfail.arms import TOOL_CATEGORIES, audit_category
from gym_trainfail.batch.grade import finished_episodes, receipts_for
from gym_trainfail.batch.layout import RunLayout
from gym_trainfail.batch.plan import BatchPlan, PlannedEpisode
from gym_trainfail.batch.sourcemap import source_map
from gym_trainfail.batch.status import Attempt, EpisodeStatus, read_status
from gym_trainfail.diagnosis.judges import Judge, RubricJudge
from gym_trainfail.diagnosis.milestones import diagnose
from gym_trainfail.files import read_json_object, write_json
from gym_trainfail.grading import Receipt, first_valid
from gym_trainfail.hashing import bytes_digest
from gym_trainfail.ledger import Event, iter_kind, read_events, summarize
from gym_trainfail.revisions import RevisionLog, Tree

#: Tools whose steps are the agent's own commands (and the training they launch).
COMMAND_TOOLS = ("shell", "run_job")
ADJUDICATION_VERSION = 4


@dataclass(frozen=True)
class Submitted:
    """One revision of an episode: its number, tree and when it was submitted."""

    number: int
    tree: Tree
    at: float


def adjudicate_batch(
    layout: RunLayout, plan: BatchPlan, *, force: bool = False, judge: Judge | None = None
) -> list[dict[str, Any]]:
    """Adjudicate every finished episode (skipping those whose inputs are unchanged)."""
    return [
        adjudicate_episode(layout, planned, force=force, judge=judge) for planned in finished_episodes(layout, plan)
    ]


def adjudicate_episode(
    layout: RunLayout, planned: PlannedEpisode, *, force: bool = False, judge: Judge | None = None
) -> dict[str, Any]:
    """Write and return the adjudication of one finished episode (its diagnosis milestones
    judged by ``judge``, the rubric judge by default)."""
    case = planned.case_spec()
    run_dir = layout.episode(planned.id)
    events = read_events(run_dir / "ledger.jsonl")
    log = RevisionLog(run_dir)
    submitted = _submissions(log, events)
    receipts = receipts_for(layout, case, {s.tree.digest for s in submitted})
    status = read_status(layout, planned.id)
    judge = judge or RubricJudge()
    rubric = case.rubric.digest if case.rubric is not None else None
    fingerprint = _fingerprint(events, submitted, receipts, status, (judge.identity, rubric))
    path = layout.adjudication(planned.id)
    if not force and (previous := read_json_object(path)) is not None and previous.get("inputs") == fingerprint:
        return previous
    revisions = []
    for item in submitted:
        smap = source_map(case, item.tree, log.store)
        diff_path = layout.source_map(planned.id, item.number)
        diff_path.parent.mkdir(parents=True, exist_ok=True)
        diff_path.write_text(smap.diff, encoding="utf-8")
        revisions.append(_revision_entry(item, receipts.get(item.tree.digest), events, smap.files, diff_path, layout))
    data = _episode_entry(planned, status, events, revisions, receipts, fingerprint)
    first = data["first_valid"]
    data["diagnosis"] = diagnose(run_dir, events, case.rubric, arm=planned.arm, judge=judge,
                                 first_valid_at=first["submitted_at"] if first else None)  # fmt: skip
    write_json(path, data)
    return data


def _submissions(log: RevisionLog, events: Sequence[Event]) -> list[Submitted]:
    times = {int(e["revision"]): float(e["t"]) for e in iter_kind(list(events), "submit")}
    found = []
    for number in log.numbers():
        recorded_at, tree = log.load(number)
        found.append(Submitted(number, tree, times.get(number, recorded_at)))
    return found


def _revision_entry(
    item: Submitted,
    receipt: Receipt | None,
    events: Sequence[Event],
    files: Sequence[Any],
    diff_path: Path,
    layout: RunLayout,
) -> dict[str, Any]:
    return {
        "revision": item.number,
        "tree": item.tree.digest,
        "submitted_at": item.at,
        "status": receipt.status if receipt is not None else "ungraded",
        "scenarios": {o.scenario: o.status for o in receipt.outcomes} if receipt is not None else {},
        "grader_device_seconds": receipt.device_seconds if receipt is not None else None,
        "cost": summarize(events, until=item.at).to_dict(),
        "source_map": {
            "files": [f.to_json() for f in files],
            "diff": str(diff_path.relative_to(layout.root)),
        },
    }


def _episode_entry(
    planned: PlannedEpisode,
    status: EpisodeStatus,
    events: Sequence[Event],
    revisions: list[dict[str, Any]],
    receipts: Mapping[str, Receipt],
    fingerprint: str,
) -> dict[str, Any]:
    graded = all(r["status"] in ("pass", "fail") for r in revisions)
    rule = first_valid((r["revision"], r["status"]) for r in revisions)
    first = next((r for r in revisions if r["revision"] == rule.revision), None)
    final = revisions[-1] if revisions else None
    attempt = status.final
    return {
        "version": ADJUDICATION_VERSION,
        "inputs": fingerprint,
        "episode": planned.id,
        "case": planned.case,
        "profile": planned.profile,
        "arm": planned.arm,
        "agent": planned.agent,
        "trial": planned.trial,
        "seed": planned.seed,
        "attempts": len(status.attempts),
        "infra_failures": status.infra_failures,
        "agent_error": attempt.reason if attempt is not None and attempt.state == "agent-error" else None,
        "finish_reason": next((e.get("reason") for e in iter_kind(list(events), "finish")), None),
        "graded": graded,
        "solved": first is not None,
        "final_pass": graded and final is not None and final["status"] == "pass",
        "final_revision": final["revision"] if final else None,
        "final_status": final["status"] if final else "no-revision",
        "first_valid": _first_valid(first),
        "first_valid_blocked_by": rule.blocked_by,
        "summary": summarize(events).to_dict(),
        "revisions": revisions,
        "scenario_table": _scenario_table(revisions),
        "grading": {
            "unique_trees": len({r["tree"] for r in revisions}),
            "grader_device_seconds": sum(r.device_seconds for r in receipts.values()),
        },
        "tools": tool_usage(events),
        "overhead": overhead(events, attempt),
    }


def _first_valid(first: Mapping[str, Any] | None) -> dict[str, Any] | None:
    if first is None:
        return None
    cost = first["cost"]
    return {
        "revision": first["revision"],
        "submitted_at": first["submitted_at"],
        "raw_seconds": cost["raw_seconds"],
        "adjusted_seconds": cost["adjusted_seconds"],
        "total_tokens": cost["total_tokens"],
        "solver_device_seconds": cost["solver_device_seconds"],
    }


def _scenario_table(revisions: Sequence[Mapping[str, Any]]) -> dict[str, list[str]]:
    """Scenario → its status in each revision (in revision order)."""
    names: list[str] = []
    for r in revisions:
        names.extend(n for n in r["scenarios"] if n not in names)
    return {n: [r["scenarios"].get(n, "ungraded") for r in revisions] for n in names}


def tool_usage(events: Sequence[Event]) -> dict[str, Any]:
    """Whether and when the arm's optional tool was used (treatment) or reached for (control),
    from the ledger's ``audit`` events: per category, the steps with a record and the first one."""
    start = next((float(e["t"]) for e in events if e.get("event") == "reset"), events[0]["t"] if events else 0.0)
    found: dict[str, list[Event]] = {category: [] for category in TOOL_CATEGORIES}
    for event in iter_kind(list(events), "audit"):
        category = audit_category(event)
        if category is not None:
            found[category].append(event)
    return {category: _usage(found[category], start) for category in TOOL_CATEGORIES}


def _usage(found: Sequence[Event], start: float) -> dict[str, Any]:
    """``count``: steps with at least one record (the watch and the hooks may both see one use);
    ``records``: audit events; ``by_kind``: events per ``source:kind`` (kind of access or report)."""
    kinds: dict[str, int] = {}
    for e in found:
        report = e.get("report") or {}
        what = report.get("access") or report.get("kind") or report.get("argument") or "other"
        key = f"{e.get('source', 'other')}:{what}"
        kinds[key] = kinds.get(key, 0) + 1
    first = found[0] if found else None
    return {
        "count": len({e.get("step") for e in found}),
        "records": len(found),
        "by_kind": dict(sorted(kinds.items())),
        "first_at_seconds": float(first["t"]) - start if first else None,
        "first_step": first.get("step") if first else None,
    }


def overhead(events: Sequence[Event], attempt: Attempt | None) -> dict[str, float | None]:
    """Episode overhead: the attempt's wall time (worker start-up included) less the agent's own
    commands and the training they launch (``shell`` and ``run_job`` steps)."""
    steps = iter_kind(list(events), "step")
    commands = sum(float(e["end"]) - float(e["start"]) for e in steps if e.get("tool") in COMMAND_TOOLS)
    wall = attempt.ended - attempt.started if attempt is not None and attempt.ended is not None else None
    worker = attempt.worker_seconds if attempt is not None else None
    return {
        "attempt_seconds": wall,
        "worker_seconds": worker,
        "startup_seconds": None if wall is None or worker is None else max(0.0, wall - worker),
        "agent_command_seconds": commands,
        "overhead_seconds": None if wall is None else max(0.0, wall - commands),
    }


def _fingerprint(
    events: Sequence[Event],
    submitted: Sequence[Submitted],
    receipts: Mapping[str, Receipt],
    status: EpisodeStatus,
    judging: tuple[str, str | None],
) -> str:
    parts = {
        "judging": judging,
        "version": ADJUDICATION_VERSION,
        "events": len(events),
        "last": events[-1] if events else None,
        "trees": [s.tree.digest for s in submitted],
        "receipts": {t: [r.grader_hash, r.status, r.created] for t, r in sorted(receipts.items())},
        "status": status.to_json(),
    }
    return bytes_digest(json.dumps(parts, sort_keys=True, default=str).encode())
