"""Every registered case as an OpenEnv environment server (``trainfail serve``, extra ``[serve]``).

:mod:`.models` holds the wire types, :mod:`.protocol` the ``/ws`` messages and how frames are
read, :mod:`.session` one episode per WebSocket session, :mod:`.claims` one session per episode,
:mod:`.auth` the bearer-token guard, :mod:`.guard` the limits before the token, :mod:`.app` the
application (exactly its documented routes) and its runner (start, signals), :mod:`.client` a
typed OpenEnv client. ``docs/serving.md`` explains the session model, frames, shutdown, routes
and security.
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
