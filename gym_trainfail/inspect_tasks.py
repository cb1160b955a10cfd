"""Every registered case as an Inspect AI task, for ``inspect eval`` by file:

    inspect eval gym_trainfail/inspect_tasks.py@ddp_token_average --model openai/gpt-4.1
    inspect eval gym_trainfail/inspect_tasks.py@trainfail -T case=path/to/case_folder --model ...

Task options (``-T``): ``arm`` (control), ``sandbox`` (auto), ``runs`` (parent of the run
directories), ``profile``. See :mod:`gym_trainfail.inspect`.
"""

from __future__ import annotations

from collections.abc import Callable

from inspect_ai import Task, task

from gym_trainfail.inspect.task import task_name, trainfail_task
from gym_trainfail.registry import default_registry


@task
def trainfail(
    case: str, arm: str = "control", sandbox: str = "auto", runs: str | None = None, profile: str | None = None
) -> Task:
    """Any case, by id or case folder."""
    return trainfail_task(case, arm=arm, sandbox=sandbox, runs=runs, profile=profile)


def _case_task(case_id: str) -> Callable[..., Task]:
    # Defined here, not imported: Inspect names a task after the module that defines it.
    def make(arm: str = "control", sandbox: str = "auto", runs: str | None = None, profile: str | None = None) -> Task:
        return trainfail_task(case_id, arm=arm, sandbox=sandbox, runs=runs, profile=profile)

    make.__doc__ = f"{case_id} as an Inspect task."
    return make


for _case in default_registry():
    globals()[task_name(_case)] = task(name=task_name(_case))(_case_task(_case.id))
