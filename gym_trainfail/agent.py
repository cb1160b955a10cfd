"""The agent interface and agent discovery.

An agent plays one episode: it gets the environment just after ``reset`` and drives
``env.step`` until the episode ends. Agents are found by name through the entry-point group
``gym_trainfail.agents`` (the scripted ``noop``, ``reference`` and ``study`` agents, the ``openai``
tool-calling loop, and any third-party agent).

Names: this module (``gym_trainfail.agent``) is the one interface; the agents themselves live
in the ``trainfail_agents`` package (``agents/trainfail_agents``) or in third-party packages;
``gym_trainfail.agents`` is only the name of the entry-point group they register under.
"""

from __future__ import annotations

import difflib
from importlib.metadata import entry_points
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from gym_trainfail.errors import TrainFailError, missing_extra

if TYPE_CHECKING:
    from gym_trainfail.env import TrainFailEnv

ENTRY_POINT_GROUP = "gym_trainfail.agents"


@runtime_checkable
class Agent(Protocol):
    """Plays episodes of a :class:`~gym_trainfail.env.TrainFailEnv`."""

    name: str

    def play(self, env: TrainFailEnv, observation: str, info: dict[str, Any]) -> float:
        """Drive ``env.step`` from the first observation until the episode ends; return the
        final reward (0.0 when the episode ended without one)."""
        ...


def agent_names() -> list[str]:
    """Names of every installed agent."""
    return sorted({ep.name for ep in entry_points(group=ENTRY_POINT_GROUP)})


def load_agent(name: str, **options: Any) -> Agent:
    """Instantiate the agent registered as ``name`` with ``options``."""
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        if ep.name == name:
            try:
                factory = ep.load()
            except ImportError as exc:
                if (missing := missing_extra(exc, f"the {name!r} agent")) is not None:
                    raise missing from None
                raise
            agent = factory(**options)
            if not isinstance(agent, Agent):
                raise TrainFailError(f"agent {name!r} ({ep.value}) does not implement play(env, observation, info)")
            return agent
    names = agent_names()
    close = difflib.get_close_matches(name, names, n=2)
    hint = f" Did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
    raise TrainFailError(f"no agent named {name!r}.{hint} Installed agents: {', '.join(names) or 'none'}.")
