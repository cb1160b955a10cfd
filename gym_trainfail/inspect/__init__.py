"""Every registered case as an Inspect AI task (extra ``[inspect]``).

    inspect eval gym_trainfail/inspect/tasks.py@ddp_token_average --model openai/gpt-4.1
    inspect eval gym_trainfail/ddp_token_average --model ...      # through the registry entry point

:mod:`.task` builds a case's task (tools, solver loop, scorer); :mod:`.tasks` registers one
task per registered case for Inspect's ``gym_trainfail/<name>`` entry point.
"""

from __future__ import annotations

from gym_trainfail.errors import MissingExtraError

try:  # the [inspect] extra: without it, say which extra to install rather than a bare ImportError
    import inspect_ai  # noqa: F401
except ImportError as exc:
    raise MissingExtraError("inspect_ai", "inspect", "gym_trainfail's Inspect AI tasks") from exc

from gym_trainfail.inspect.task import STORE_KEY, task_name, trainfail_agent, trainfail_grade, trainfail_task

__all__ = ["STORE_KEY", "task_name", "trainfail_agent", "trainfail_grade", "trainfail_task"]
