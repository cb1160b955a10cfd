"""Every registered case as an Inspect AI task, one module for both ways Inspect finds tasks:

    inspect eval gym_trainfail/ddp_token_average --model openai/gpt-4.1        # the entry point
    inspect eval gym_trainfail/inspect/tasks.py@ddp_token_average --model ...  # by file
    inspect eval gym_trainfail/inspect/tasks.py@trainfail -T case=path/to/case_folder --model ...

Task options (``-T``): ``arm`` (control), ``sandbox`` (auto), ``runs`` (parent of the run
directories), ``profile``. The package's ``inspect_ai`` entry point names this module, so a task
is defined once and named alike both ways (Inspect names a task after the module defining it).
"""

from __future__ import annotations

from collections.abc import Callable

from inspect_ai import Task, task

from gym_trainfail.errors import TrainFailError
from gym_trainfail.inspect.task import task_name, trainfail_task
from gym_trainfail.registry import default_registry


@task
def trainfail(
    case: str, arm: str = "control", sandbox: str = "auto", runs: str | None = None, profile: str | None = None
) -> Task:
    """Any case, by id or case folder."""
    return trainfail_task(case, arm=arm, sandbox=sandbox, runs=runs, profile=profile)


def case_task(case_id: str) -> Callable[..., Task]:
    """A task function for one case; its options are ``-T`` arguments of ``inspect eval``."""

    def make(arm: str = "control", sandbox: str = "auto", runs: str | None = None, profile: str | None = None) -> Task:
        return trainfail_task(case_id, arm=arm, sandbox=sandbox, runs=runs, profile=profile)

    make.__doc__ = f"{case_id} as an Inspect task (arm, sandbox, runs directory, profile)."
    return make


def register_cases() -> dict[str, Callable[..., Task]]:
    """A task for every registered case, bound in this module under its task name (two
    registered versions of one case would share a name: refused, naming both)."""
    tasks: dict[str, Callable[..., Task]] = {}
    owners: dict[str, str] = {}
    for case in default_registry():
        name = task_name(case)
        if name in owners:
            raise TrainFailError(f"cases {owners[name]} and {case.id} would both be the Inspect task {name!r}: "
                                 "register one version of a case")  # fmt: skip
        owners[name] = case.id
        tasks[name] = task(name=name)(case_task(case.id))
    globals().update(tasks)
    return tasks


TASKS = register_cases()
