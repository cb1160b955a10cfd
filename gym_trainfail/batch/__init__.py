"""Leaderboard batch runs: plan → episodes → grades → adjudication, handing off through files.

* :mod:`~gym_trainfail.batch.plan` writes the plan (cases × arms × agents × trials) first;
* :mod:`~gym_trainfail.batch.driver` plays unfinished episodes on a runner —
  :class:`~gym_trainfail.batch.local.LocalRunner` (worker subprocesses) or
  :class:`~gym_trainfail.batch.ray_runner.RayRunner` (Ray tasks) — retrying infrastructure
  failures;
* :mod:`~gym_trainfail.batch.grade` grades every distinct revision tree once;
* :mod:`~gym_trainfail.batch.adjudicate` derives each episode's verdicts and costs.

Every stage skips what is already on disk, so re-running the same command resumes.
"""

from __future__ import annotations

from gym_trainfail.batch.adjudicate import adjudicate_batch, adjudicate_episode
from gym_trainfail.batch.driver import Counts, run_episodes
from gym_trainfail.batch.grade import GradingReport, grade_batch
from gym_trainfail.batch.layout import RunLayout
from gym_trainfail.batch.local import LocalRunner, default_workers
from gym_trainfail.batch.plan import (
    BatchPlan,
    BatchSpec,
    PlannedEpisode,
    load_plan,
    make_plan,
    resolve_cases,
    write_plan,
)

__all__ = [
    "BatchPlan",
    "BatchSpec",
    "Counts",
    "GradingReport",
    "LocalRunner",
    "PlannedEpisode",
    "RunLayout",
    "adjudicate_batch",
    "adjudicate_episode",
    "default_workers",
    "grade_batch",
    "load_plan",
    "make_plan",
    "resolve_cases",
    "run_episodes",
    "write_plan",
]
