"""Every registered case as an OpenEnv environment server (``trainfail serve``, extra ``[serve]``).

:mod:`.models` holds the wire types, :mod:`.session` one episode per WebSocket session,
:mod:`.auth` the bearer-token guard, :mod:`.app` the application and its runner,
:mod:`.client` a typed OpenEnv client. ``docs/serving.md`` explains the session model and
security.
"""

from __future__ import annotations

from gym_trainfail.serve.app import build_app
from gym_trainfail.serve.client import TrainFailClient
from gym_trainfail.serve.models import TrainFailAction, TrainFailObservation, TrainFailState
from gym_trainfail.serve.session import EpisodeSession, ServeConfig

__all__ = [
    "EpisodeSession",
    "ServeConfig",
    "TrainFailAction",
    "TrainFailClient",
    "TrainFailObservation",
    "TrainFailState",
    "build_app",
]
