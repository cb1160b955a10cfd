"""gym-trainfail: Gymnasium environments for agents that diagnose and repair real
distributed-training failures.

>>> import gym_trainfail
>>> env = gym_trainfail.make("TrainFail/DDPTokenAverage-v1", arm="control", sandbox="auto")
>>> observation, info = env.reset(seed=0)

Importing the package registers every case's id with Gymnasium (a case is validated when it is
made, so the import stays cheap), so
``gymnasium.make("TrainFail/DDPTokenAverage-v1")`` works after ``import gym_trainfail`` (or use
``gymnasium.make("gym_trainfail:TrainFail/DDPTokenAverage-v1")`` without the import).
"""

from __future__ import annotations

from typing import Any

from gym_trainfail.cases import CaseSpec, Scenario
from gym_trainfail.env import TrainFailEnv
from gym_trainfail.errors import (
    CaseDefinitionError,
    SandboxUnavailableError,
    ToolError,
    TrainFailError,
    UnknownCaseError,
)
from gym_trainfail.registry import Registry, default_registry, get_case, register_ids

__version__ = "0.1.0"

__all__ = [
    "CaseDefinitionError",
    "CaseSpec",
    "Registry",
    "SandboxUnavailableError",
    "Scenario",
    "ToolError",
    "TrainFailEnv",
    "TrainFailError",
    "UnknownCaseError",
    "default_registry",
    "get_case",
    "make",
    "registered_ids",
]


def make(case_id: str, **kwargs: Any) -> TrainFailEnv:
    """Make the environment of a registered case (``arm=``, ``sandbox=``, ... as in
    :class:`TrainFailEnv`). Unknown ids raise :class:`UnknownCaseError` with near names."""
    return TrainFailEnv(case=get_case(case_id), **kwargs)


def registered_ids() -> list[str]:
    """Ids of every registered case."""
    return default_registry().ids()


register_ids()
