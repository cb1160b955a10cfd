"""The episode stage: dispatch every unfinished episode of a plan to a runner and record how
each attempt ended.

Re-running skips finished episodes, adopts results of attempts a crashed driver never
collected, and retries infrastructure failures until the plan's attempt limit. Whatever a
failed attempt left behind is moved under ``attempts/`` before the retry, so nothing recorded
is lost.
"""

from __future__ import annotations

import shutil
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass, replace

from gym_trainfail.batch.layout import RunLayout
from gym_trainfail.batch.local import read_result
from gym_trainfail.batch.plan import BatchPlan, PlannedEpisode
from gym_trainfail.batch.runner import Runner
from gym_trainfail.batch.status import (
    Attempt,
    EpisodeStatus,
    interrupted,
    read_status,
    write_status,
)
from gym_trainfail.batch.worker import RESULT_FILE, AttemptResult
from gym_trainfail.sandbox.disk import reclaim_stale


@dataclass(frozen=True)
class Counts:
    """Where the episode stage stands."""

    total: int
    done: int = 0
    running: int = 0
    failed: int = 0
    gave_up: int = 0
    skipped: int = 0

    @property
    def remaining(self) -> int:
        return self.total - self.done - self.gave_up


#: Called after every change: the counts and a line worth showing (or "").
Progress = Callable[[Counts, str], None]


def run_episodes(layout: RunLayout, plan: BatchPlan, runner: Runner, progress: Progress | None = None) -> Counts:
    """Play every episode of ``plan`` that has not finished; returns the final counts."""
    statuses = {e.id: _reconcile(layout, read_status(layout, e.id)) for e in plan.episodes}
    queue = [e for e in plan.episodes if statuses[e.id].state(plan.max_attempts) == "pending"]
    finished = sum(s.state(plan.max_attempts) == "done" for s in statuses.values())
    counts = Counts(
        total=len(plan.episodes),
        done=finished,
        skipped=finished,
        gave_up=sum(s.state(plan.max_attempts) == "gave-up" for s in statuses.values()),
    )
    report = progress or (lambda _counts, _line: None)
    report(counts, "")
    running: dict[str, PlannedEpisode] = {}
    try:
        while queue or running:
            while queue and len(running) < runner.slots:
                planned = queue.pop(0)
                statuses[planned.id] = _start(layout, runner, planned, statuses[planned.id])
                running[planned.id] = planned
            counts = replace(counts, running=len(running))
            report(counts, "")
            for episode, number, result in runner.wait(timeout_s=1.0):
                planned = running.pop(episode)
                status = _record(layout, statuses[episode], number, result, runner.name)
                statuses[episode] = status
                counts, line = _count(counts, status, result, plan.max_attempts)
                if status.state(plan.max_attempts) == "pending":
                    queue.append(planned)
                report(replace(counts, running=len(running)), line)
    except BaseException:
        _cancel(layout, runner, statuses, running)
        raise
    runner.close()
    return replace(counts, running=0)


def _reconcile(layout: RunLayout, status: EpisodeStatus) -> EpisodeStatus:
    """Settle an attempt left ``running`` by a driver that died: adopt its result, or fail it."""
    if not status.attempts or status.attempts[-1].state != "running":
        return status
    last = status.attempts[-1]
    path = layout.attempt(status.episode, last.number) / RESULT_FILE
    settled = _settle(last, read_result(path)) if path.exists() else interrupted(last)
    status = status.with_attempt(settled)
    write_status(layout, status)
    return status


def _start(layout: RunLayout, runner: Runner, planned: PlannedEpisode, status: EpisodeStatus) -> EpisodeStatus:
    number = len(status.attempts) + 1
    leftovers = layout.episode(planned.id)
    # A killed worker may have left its workspace's disk-budget filesystem mounted: close it (its
    # contents copied out in place) before the folder moves, or a later reclaim would copy them
    # back to where the next attempt starts.
    reclaim_stale()
    if leftovers.exists():
        aside = layout.attempt(planned.id, number - 1) / "episode"
        aside.parent.mkdir(parents=True, exist_ok=True)
        shutil.move(str(leftovers), str(aside))
    attempt = Attempt(number, "running", time.time(), runner=runner.name, host=socket.gethostname())
    status = status.with_attempt(attempt)
    write_status(layout, status)
    pid = runner.start(planned, number)
    status = status.with_attempt(replace(attempt, pid=pid))
    write_status(layout, status)
    return status


def _settle(attempt: Attempt, result: AttemptResult) -> Attempt:
    return replace(
        attempt,
        state=result.state,
        ended=result.ended,
        reason=result.reason,
        host=result.host or attempt.host,
        pid=result.pid,
        worker_seconds=max(0.0, result.ended - result.started),
    )


def _record(layout: RunLayout, status: EpisodeStatus, number: int, result: AttemptResult, runner: str) -> EpisodeStatus:
    current = next((a for a in status.attempts if a.number == number), None)
    attempt = current or Attempt(number, "running", result.started, runner=runner)
    status = status.with_attempt(_settle(attempt, result))
    write_status(layout, status)
    return status


def _count(counts: Counts, status: EpisodeStatus, result: AttemptResult, max_attempts: int) -> tuple[Counts, str]:
    state = status.state(max_attempts)
    episode = status.episode
    if state == "done":
        line = ""
        if result.state == "agent-error":
            line = f"{episode}: agent error (the episode counts): {result.reason.splitlines()[0]}"
        return replace(counts, done=counts.done + 1), line
    reason = result.reason.splitlines()[0] if result.reason else "no reason given"
    if state == "gave-up":
        line = f"{episode}: gave up after {status.infra_failures} infrastructure failures: {reason}"
        return replace(counts, failed=counts.failed + 1, gave_up=counts.gave_up + 1), line
    line = f"{episode}: infrastructure failure (attempt {len(status.attempts)}, will retry): {reason}"
    return replace(counts, failed=counts.failed + 1), line


def _cancel(
    layout: RunLayout, runner: Runner, statuses: dict[str, EpisodeStatus], running: dict[str, PlannedEpisode]
) -> None:
    """The operator stopped the batch: stop the workers and mark their attempts cancelled."""
    runner.close()
    for episode in running:
        status = statuses[episode]
        last = status.attempts[-1]
        path = layout.attempt(episode, last.number) / RESULT_FILE
        if path.exists():
            settled = _settle(last, read_result(path))
        else:
            settled = replace(last, state="cancelled", ended=time.time(), reason="the batch was stopped")
        write_status(layout, status.with_attempt(settled))
