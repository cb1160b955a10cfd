"""The ``trainfail serve`` application: OpenEnv's server over the served cases, token-guarded.

One FastAPI app built by OpenEnv's :func:`create_app` (its ``/ws`` session protocol,
``/schema``, ``/metadata``, ``/health``) with :class:`~gym_trainfail.serve.session.EpisodeSession`
as the environment, at most ``max_sessions`` sessions at once, every route behind
:class:`~gym_trainfail.serve.auth.BearerAuth`. It runs in OpenEnv's *production* mode: the
stateless HTTP ``/reset`` and ``/step`` (a new environment per request) are not served, as an
episode is a sandbox with a run directory; episodes live in WebSocket sessions.
"""

from __future__ import annotations

import functools
import logging
import socket
from collections.abc import Callable
from typing import Any

import uvicorn
from fastapi import FastAPI
from openenv.core.env_server.http_server import create_app

from gym_trainfail.serve.auth import BearerAuth
from gym_trainfail.serve.models import MAX_ACTION_CHARS, TrainFailAction, TrainFailObservation, TrainFailState
from gym_trainfail.serve.session import EpisodeSession, ServeConfig

log = logging.getLogger(__name__)

#: Largest WebSocket frame accepted: an action at the size limit, JSON-escaped, fits; a larger
#: frame closes the connection (code 1009) and leaves the session's episode resumable.
WS_MAX_BYTES = 8 * MAX_ACTION_CHARS
LOOPBACK = ("127.0.0.1", "::1", "localhost")


def build_app(config: ServeConfig, token: str, max_sessions: int) -> FastAPI:
    """The served application (OpenEnv's routes plus ``/cases``), every route token-guarded."""
    if max_sessions < 1:
        raise ValueError("max_sessions must be at least 1")
    app: FastAPI = create_app(
        functools.partial(EpisodeSession, config),
        TrainFailAction,
        TrainFailObservation,
        env_name="gym-trainfail",
        max_concurrent_envs=max_sessions,
        state_cls=TrainFailState,
        mode="production",
    )

    @app.get("/cases")
    def served_cases() -> dict[str, Any]:
        """The cases and arms this server serves, and its session bound."""
        return {
            "cases": sorted(config.cases),
            "arms": list(config.arms),
            "max_sessions": max_sessions,
            "devices": config.pool.describe(),
        }

    # Sessions whose connection is still open at shutdown are closed here (each says how to resume).
    app.router.on_shutdown.append(config.open.close_all)
    app.add_middleware(BearerAuth, token=token)
    return app


def bind(host: str, port: int) -> socket.socket:
    """A listening socket on ``host:port`` (port 0: any free port)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
        sock.listen(128)
    except OSError:
        sock.close()
        raise
    return sock


def run(app: FastAPI, sock: socket.socket, on_ready: Callable[[], None]) -> None:
    """Serve ``app`` on ``sock`` until SIGINT/SIGTERM; open episodes are closed resumable on the way out."""
    app.router.on_startup.append(on_ready)
    config = uvicorn.Config(app, log_level="warning", ws_max_size=WS_MAX_BYTES, lifespan="on", access_log=False)
    uvicorn.Server(config).run(sockets=[sock])
