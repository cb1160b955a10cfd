"""The grade stage: every submitted revision of every finished episode, graded once per
distinct tree across the whole batch, each scenario in a fresh sandbox.

Receipts land in ``grades/receipts/`` of the run directory; one already there (same grader
version, a verdict rather than an error) means that tree is skipped. The stage report,
``grades/grading.json``, says how much deduplication saved and what grading cost in
device-seconds, which are the grader's and are never mixed with the solver's.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from gym_trainfail.batch.layout import RunLayout
from gym_trainfail.batch.plan import BatchPlan, PlannedEpisode
from gym_trainfail.batch.status import read_status
from gym_trainfail.cases import CaseSpec
from gym_trainfail.devices import DevicePool
from gym_trainfail.files import write_json
from gym_trainfail.grading import Grader, Receipt
from gym_trainfail.revisions import RevisionLog
from gym_trainfail.sandbox import resolve_backend


@dataclass(frozen=True)
class TreeJob:
    """One distinct revision tree of one case, and where a copy of it can be checked out."""

    case: str
    tree: str
    episode: str
    revision: int
    submissions: int


@dataclass
class GradingReport:
    """What the grade stage did and what grading costs."""

    revisions: int = 0
    unique_trees: int = 0
    #: Trees graded by this run of the stage, found in the node's receipt cache, or already in the batch.
    graded_now: int = 0
    node_cache_hits: int = 0
    reused: int = 0
    errors: int = 0
    #: What grading the batch costs: every distinct tree once, and every revision on its own.
    grader_device_seconds: float = 0.0
    grader_device_seconds_without_dedup: float = 0.0
    #: What this run of the stage actually spent.
    grader_device_seconds_spent_now: float = 0.0
    wall_seconds: float = 0.0
    parallel_scenarios: int = 1
    workers: int = 1
    per_tree: list[dict[str, Any]] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


#: Called when a tree starts (receipt ``None``) and when it is graded.
TreeProgress = Callable[[TreeJob, Receipt | None], None]


def collect_trees(layout: RunLayout, plan: BatchPlan) -> list[TreeJob]:
    """Distinct (case, tree) pairs over every finished episode, first submission first."""
    jobs: dict[tuple[str, str], TreeJob] = {}
    for planned in finished_episodes(layout, plan):
        log = RevisionLog(layout.episode(planned.id))
        for number in log.numbers():
            try:
                _, tree = log.load(number)
            except (OSError, ValueError, KeyError, TypeError) as exc:
                print(f"batch grading: skipping revision {number} of {planned.id}: {exc}", file=sys.stderr)
                continue
            key = (planned.case, tree.digest)
            if key in jobs:
                job = jobs[key]
                jobs[key] = TreeJob(job.case, job.tree, job.episode, job.revision, job.submissions + 1)
            else:
                jobs[key] = TreeJob(planned.case, tree.digest, planned.id, number, 1)
    return list(jobs.values())


def finished_episodes(layout: RunLayout, plan: BatchPlan) -> list[PlannedEpisode]:
    """Planned episodes whose last attempt counts (played to the end, or ended by the agent's error)."""
    return [e for e in plan.episodes if read_status(layout, e.id).state(plan.max_attempts) == "done"]


def grade_batch(
    layout: RunLayout,
    plan: BatchPlan,
    *,
    workers: int = 1,
    parallel_scenarios: int = 1,
    progress: TreeProgress | None = None,
) -> GradingReport:
    """Grade every distinct tree the batch's episodes submitted; write receipts and the report."""
    started = time.time()
    jobs = collect_trees(layout, plan)
    cases = {e.case: e for e in plan.episodes}
    graders: dict[str, Grader] = {}
    pool = DevicePool(backend=resolve_backend(plan.spec.sandbox))
    for case_id, planned in cases.items():
        graders[case_id] = Grader(
            planned.case_spec(), sandbox=plan.spec.sandbox, pool=pool, parallel_scenarios=parallel_scenarios
        )
    report = GradingReport(parallel_scenarios=parallel_scenarios, workers=workers)

    def grade(job: TreeJob) -> tuple[TreeJob, Receipt, str]:
        return (job, *_grade_tree(layout, graders[job.case], job, progress))

    with ThreadPoolExecutor(max(1, workers), thread_name_prefix="grade") as executor:
        results = list(executor.map(grade, jobs))
    for job, receipt, source in results:
        _tally(report, job, receipt, source)
    report.wall_seconds = time.time() - started
    write_json(layout.grading_report, report.to_json())
    return report


def _grade_tree(layout: RunLayout, grader: Grader, job: TreeJob, progress: TreeProgress | None) -> tuple[Receipt, str]:
    """The receipt of ``job`` and where it came from: ``batch`` (already graded for this batch),
    ``node-cache`` (the node's receipt cache) or ``graded`` (graded now)."""
    path = layout.receipt(job.case, job.tree)
    existing = load_receipt(path)
    if existing is not None and existing.grader_hash == grader.grader_hash and existing.status != "error":
        return existing, "batch"
    if progress:
        progress(job, None)
    started = time.time()
    receipt = grader.grade_revision(RevisionLog(layout.episode(job.episode)), job.revision, job.tree)
    write_json(path, receipt.to_json())
    if progress:
        progress(job, receipt)
    return receipt, "graded" if receipt.created >= started else "node-cache"


def _tally(report: GradingReport, job: TreeJob, receipt: Receipt, source: str) -> None:
    report.revisions += job.submissions
    report.unique_trees += 1
    report.graded_now += int(source == "graded")
    report.node_cache_hits += int(source == "node-cache")
    report.reused += int(source == "batch")
    report.errors += int(receipt.status == "error")
    report.grader_device_seconds += receipt.device_seconds
    report.grader_device_seconds_without_dedup += receipt.device_seconds * job.submissions
    report.grader_device_seconds_spent_now += receipt.device_seconds if source == "graded" else 0.0
    report.per_tree.append(
        {
            "case": job.case,
            "tree": job.tree,
            "status": receipt.status,
            "source": source,
            "submissions": job.submissions,
            "device_seconds": receipt.device_seconds,
            "duration_s": receipt.duration_s,
            "scenarios": len(receipt.outcomes),
        }
    )


def load_receipt(path: Path) -> Receipt | None:
    """A receipt file, or ``None`` when it is absent or unreadable."""
    try:
        return Receipt.from_json(json.loads(path.read_text()))
    except (OSError, json.JSONDecodeError, KeyError, TypeError):
        return None


def receipts_for(layout: RunLayout, case: CaseSpec, trees: Iterable[str]) -> dict[str, Receipt]:
    """The batch's receipts of ``trees`` (those it has)."""
    found = {}
    for tree in trees:
        receipt = load_receipt(layout.receipt(case.id, tree))
        if receipt is not None:
            found[tree] = receipt
    return found
