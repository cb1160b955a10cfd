"""Inspect's entry point (``inspect_ai`` group): one task per registered case, named
``gym_trainfail/<task name>``, e.g. ``inspect eval gym_trainfail/ddp_token_average``."""

from __future__ import annotations

from collections.abc import Callable

from inspect_ai import Task, task

from gym_trainfail.inspect.task import task_name, trainfail_task
from gym_trainfail.registry import default_registry


def case_task(case_id: str) -> Callable[..., Task]:
    """A task function for one case; its options are ``-T`` arguments of ``inspect eval``."""

    def make(arm: str = "control", sandbox: str = "auto", runs: str | None = None, profile: str | None = None) -> Task:
        return trainfail_task(case_id, arm=arm, sandbox=sandbox, runs=runs, profile=profile)

    make.__doc__ = f"{case_id} as an Inspect task (arm, sandbox, runs directory, profile)."
    return make


def register_cases() -> dict[str, Callable[..., Task]]:
    """Register a task for every registered case; returns them by task name."""
    return {task_name(case): task(name=task_name(case))(case_task(case.id)) for case in default_registry()}


TASKS = register_cases()
