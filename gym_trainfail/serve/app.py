"""The ``trainfail serve`` application: OpenEnv's WebSocket protocol over the served cases.

The app speaks OpenEnv's wire format (any OpenEnv ``EnvClient`` works) but is built here, route
by route, rather than by OpenEnv's ``create_app``: that one also registers MCP routes (``POST
/mcp``, WebSocket ``/mcp``, an ``mcp`` message type whose sessions escape ``--max-sessions``),
task routes, stateless ``/reset``/``/step``, and turns on a web interface when
``ENABLE_WEB_INTERFACE`` is set. This server serves exactly :data:`ROUTES`, whatever the
environment says, every one behind :class:`~gym_trainfail.serve.auth.BearerAuth`.

``/ws`` is one :class:`~gym_trainfail.serve.session.EpisodeSession` per connection, at most
``max_sessions`` at once. Each frame is parsed (:mod:`.protocol`) and each call run on the
session's own thread, so the event loop only moves bytes: a large frame or a long step in one
session never holds up another.

:func:`run` serves until a signal. The first SIGTERM/SIGINT stops accepting connections, lets
every running call finish (its ledger line written), then closes every episode resumable. The
second stops at once: idle sessions are closed, each running call is recorded as interrupted in
its episode's ledger by the host, the sandbox processes are killed and the process exits with
status 128 + the signal number, within :data:`HALT_GRACE_S` plus a moment.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import ctypes.util
import functools
import gc
import logging
import os
import signal
import socket
import sys
import threading
from collections.abc import AsyncIterator, Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import FrameType
from typing import Any, Final, cast

import uvicorn
from fastapi import FastAPI, WebSocket
from openenv.core.env_server.serialization import serialize_observation
from openenv.core.env_server.types import (
    SchemaResponse,
    WSErrorResponse,
    WSObservationResponse,
    WSStateResponse,
)
from starlette.websockets import WebSocketDisconnect

from gym_trainfail.errors import TrainFailError
from gym_trainfail.serve import protocol
from gym_trainfail.serve.auth import BearerAuth
from gym_trainfail.serve.guard import (
    ACCEPT_BATCH,
    LISTEN_BACKLOG,
    FdBudget,
    Gate,
    RepeatFilter,
    accept_error_handler,
    guarded_protocol,
)
from gym_trainfail.serve.models import MAX_ACTION_CHARS, TrainFailAction, TrainFailObservation, TrainFailState
from gym_trainfail.serve.protocol import (
    CAPACITY_REACHED,
    EXECUTION_ERROR,
    VALIDATION_ERROR,
    Close,
    Refusal,
    Reset,
    StateRequest,
    Step,
)
from gym_trainfail.serve.session import (
    RESET_OPTIONS,
    CapacityError,
    EpisodeSession,
    ServeConfig,
    Sessions,
    metadata,
)

log = logging.getLogger("gym_trainfail.serve")

#: Largest WebSocket frame accepted: an action at the size limit fits, written as UTF-8 or with
#: BMP characters escaped (6 bytes each); a larger frame closes the connection (code 1009) and
#: leaves the session's episode resumable.
WS_MAX_BYTES: Final = 8 * MAX_ACTION_CHARS
LOOPBACK: Final = ("127.0.0.1", "::1", "localhost")
#: Every route the server serves (kind, path); docs/serving.md lists the same, and a test checks both.
ROUTES: Final = (
    ("GET", "/health"),
    ("GET", "/metadata"),
    ("GET", "/schema"),
    ("GET", "/cases"),
    ("WebSocket", "/ws"),
)
#: After the second signal: how long idle sessions get to close before the process exits.
HALT_GRACE_S: Final = 3.0


def build_app(config: ServeConfig, token: str, max_sessions: int) -> FastAPI:
    """The served application (:data:`ROUTES`), every route token-guarded."""
    sessions = Sessions(config, max_sessions)

    @contextlib.asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        yield
        # Sessions whose connection is still open at shutdown (each says how to resume).
        await asyncio.to_thread(sessions.close_all)

    app = FastAPI(title="gym-trainfail", docs_url=None, redoc_url=None, openapi_url=None, lifespan=lifespan)
    app.state.sessions = sessions

    @app.get("/health")
    def health() -> dict[str, str]:
        """Whether the server is up."""
        return {"status": "healthy"}

    @app.get("/metadata")
    def get_metadata() -> dict[str, Any]:
        """OpenEnv's environment metadata."""
        return dict(metadata(config).model_dump())

    @app.get("/schema")
    def schema() -> dict[str, Any]:
        """The action, observation and state JSON schemas (OpenEnv's ``/schema``)."""
        schemas = SchemaResponse(
            action=TrainFailAction.model_json_schema(),
            observation=TrainFailObservation.model_json_schema(),
            reset_observation=TrainFailObservation.model_json_schema(),
            state=TrainFailState.model_json_schema(),
        )
        return dict(schemas.model_dump())

    @app.get("/cases")
    def served_cases() -> dict[str, Any]:
        """The cases and arms this server serves, its session bound and the sessions open now."""
        return {
            "cases": sorted(config.cases),
            "arms": list(config.arms),
            "max_sessions": max_sessions,
            "open_sessions": len(sessions),
            "devices": config.pool.describe(),
        }

    @app.websocket("/ws")
    async def ws(websocket: WebSocket) -> None:
        """One session: OpenEnv's reset/step/state/close messages."""
        await serve_session(websocket, sessions)

    app.add_middleware(BearerAuth, token=token)
    return app


def served_routes(app: FastAPI) -> list[tuple[str, str]]:
    """(kind, path) of every route ``app`` serves, HTTP methods (HEAD aside) and WebSockets."""
    found = []
    for route in app.routes:
        path = getattr(route, "path", "")
        methods = getattr(route, "methods", None)
        if methods:
            found += [(m, path) for m in sorted(methods) if m != "HEAD"]
        else:
            found.append(("WebSocket", path))
    return sorted(found)


#: Frames at least this large give the heap back to the OS once handled (see :func:`trim_heap`).
TRIM_AFTER_BYTES: Final = 1 << 20


@functools.cache
def _malloc_trim() -> Callable[[int], int] | None:
    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name) if name else None
    except OSError:
        return None
    return cast(Callable[[int], int] | None, getattr(libc, "malloc_trim", None))  # None: not glibc


def trim_heap() -> None:
    """Give freed heap memory back to the OS (glibc's ``malloc_trim``; nothing elsewhere).

    Each session's thread and each large frame leave glibc arenas holding freed memory, so the
    server's RSS grew by megabytes per session and stayed up after a 20 MB frame; Python frees
    the objects (no session or env outlives its connection), glibc keeps the pages."""
    trim = _malloc_trim()
    if trim is not None:
        trim(0)


def _error(code: str, message: str, **extra: Any) -> str:
    return str(WSErrorResponse(data={"message": message, "code": code, **extra}).model_dump_json())


def _run_call(session: EpisodeSession, message: Reset | Step) -> str:
    """Run one reset or step on the session's thread; the reply frame."""
    try:
        if isinstance(message, Reset):
            unknown = sorted(str(k)[:40] for k in message.options if k not in RESET_OPTIONS)
            if unknown:
                raise TrainFailError(f"unknown reset option(s) {unknown[:10]}; reset takes {', '.join(RESET_OPTIONS)}")
            observation = session.reset(**message.options)
        else:
            observation = session.step(message.action)
    except TrainFailError as exc:
        return _error(EXECUTION_ERROR, str(exc))
    except Exception as exc:  # noqa: BLE001 - reported to the client and logged, the session goes on
        call = "reset" if isinstance(message, Reset) else "step"
        log.exception("%s failed in a session", call)
        return _error(EXECUTION_ERROR, f"{call} failed on the server ({type(exc).__name__}: {str(exc)[:500]})")
    return str(WSObservationResponse(data=serialize_observation(observation)).model_dump_json())


def _close(session: EpisodeSession) -> None:
    session.close()
    gc.collect()  # the closed env's reference cycles, so that their memory can go back too
    trim_heap()


def _state(session: EpisodeSession) -> str:
    return str(WSStateResponse(data=session.state.model_dump()).model_dump_json())


async def serve_session(websocket: WebSocket, sessions: Sessions) -> None:
    """Serve one WebSocket connection as one session until it closes (see :mod:`.protocol`)."""
    loop = asyncio.get_running_loop()
    if websocket.scope.get("query_string"):
        # OpenEnv's clients pass nothing here; OpenEnv's own server reads ?session_id= to share a
        # session between connections, which this server never does.
        await websocket.accept()
        await websocket.send_text(_error(VALIDATION_ERROR, "/ws takes no query parameters; connect to /ws"))
        await websocket.close(1008)
        return
    try:
        session = sessions.open()
    except CapacityError as exc:
        await websocket.accept()
        await websocket.send_text(
            _error(CAPACITY_REACHED, str(exc), active_sessions=exc.active, max_sessions=exc.limit)
        )
        await websocket.close(1013)  # try again later
        return
    executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="session")
    try:
        await websocket.accept()
        while True:
            received = await websocket.receive()
            if received["type"] == "websocket.disconnect":
                break
            text, data = received.get("text"), received.get("bytes")
            frame: str | bytes = text if text is not None else (data or b"")
            del received, text, data
            large = len(frame) >= TRIM_AFTER_BYTES
            # Off the loop: a 20 MB frame takes tens of milliseconds to parse.
            message = await loop.run_in_executor(executor, protocol.parse_frame, frame)
            del frame
            if isinstance(message, Close):
                break
            if isinstance(message, Refusal):
                reply = _error(message.code, message.message)
            elif isinstance(message, StateRequest):
                reply = _state(session)
            else:
                reply = await loop.run_in_executor(executor, _run_call, session, message)
            del message
            await websocket.send_text(reply)
            if large:
                await loop.run_in_executor(executor, trim_heap)
    except (WebSocketDisconnect, OSError):
        pass  # the client went away (or the server is stopping): the session closes below
    except RuntimeError as exc:  # starlette: a send after the connection closed
        log.debug("session connection ended: %s", exc)
    finally:
        sessions.release(session)  # a slot belongs to a connection, and this one is gone
        try:
            await asyncio.shield(loop.run_in_executor(executor, _close, session))
        finally:
            sessions.discard(session)
            executor.shutdown(wait=False)
            with contextlib.suppress(Exception):
                await websocket.close()


def bind(host: str, port: int) -> socket.socket:
    """A listening socket on ``host:port`` (port 0: any free port)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
        sock.listen(LISTEN_BACKLOG)
    except OSError:
        sock.close()
        raise
    return sock


class TrainFailServer(uvicorn.Server):
    """uvicorn's server with this project's start and stop (see the module docstring)."""

    def __init__(self, config: uvicorn.Config, sessions: Sessions, gate: Gate, on_ready: Callable[[], None]) -> None:
        super().__init__(config)
        self.sessions = sessions
        self.gate = gate
        self.on_ready = on_ready
        self._halting = False

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        # Failed accept() calls (EMFILE) are counted, not logged with a traceback each.
        asyncio.get_running_loop().set_exception_handler(accept_error_handler(self.gate.tally))
        await super().startup(sockets=sockets)
        for sock in sockets or ():
            # asyncio listens with uvicorn's backlog, which is also how many connections it
            # accepts per wake-up; keep that small (ACCEPT_BATCH) and the kernel's queue long.
            sock.listen(LISTEN_BACKLOG)
        self.on_ready()

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        if not self.should_exit:
            busy = sum(1 for s in self.sessions if s.busy)
            # os.write, not print: a signal handler may interrupt a print to stderr in progress.
            os.write(
                2,
                f"trainfail serve: stopping; {busy} running call(s) finish first, then every open episode is "
                "closed resumable (send the signal again to stop them now)\n".encode(),
            )
            super().handle_exit(sig, frame)
            return
        if self._halting:
            return
        self._halting = True
        threading.Thread(target=halt, args=(self.sessions, sig), name="halt", daemon=True).start()


def halt(sessions: Sessions, sig: int) -> None:
    """The second signal: stop every session now, kill the sandboxes' processes, exit."""
    name = signal.Signals(sig).name
    try:
        interrupted = sessions.halt(f"second {name}", HALT_GRACE_S)
        children = child_processes()
        for episode in interrupted:
            print(
                f"trainfail serve: episode {episode} interrupted in its running call; it stays as of its last "
                f"completed step: continue it with reset(resume={episode!r})",
                file=sys.stderr,
            )
        print(f"trainfail serve: stopped on a second {name}", file=sys.stderr, flush=True)
        sys.stdout.flush()
        # The running calls' sandboxes (each command leads its own process group). bwrap's
        # die-with-parent and Docker's lifeline would end them with this process too.
        for pid in children:
            with contextlib.suppress(OSError):
                os.killpg(pid, signal.SIGKILL)
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
    finally:
        os._exit(128 + sig)


def child_processes() -> list[int]:
    """The ids of this process's child processes (from /proc)."""
    me, found = os.getpid(), []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[-1].split()
        if len(fields) > 1 and fields[1] == str(me):
            found.append(int(entry.name))
    return found


def make_server(app: FastAPI, gate: Gate, on_ready: Callable[[], None]) -> TrainFailServer:
    """The uvicorn server for ``app`` (built by :func:`build_app`), its connections under ``gate``."""
    config = uvicorn.Config(
        app,
        http=guarded_protocol(gate),
        # The sans-I/O implementation where this uvicorn has it (0.35+), else the older one.
        ws="websockets-sansio" if "websockets-sansio" in uvicorn.config.WS_PROTOCOLS else "websockets",
        log_level="warning",
        ws_max_size=WS_MAX_BYTES,
        lifespan="on",
        access_log=False,
        backlog=ACCEPT_BATCH,
    )
    # Client faults (bad requests, bad handshakes, invalid UTF-8) are logged once per interval.
    errors = logging.getLogger("uvicorn.error")
    if not any(isinstance(f, RepeatFilter) for f in errors.filters):
        errors.addFilter(RepeatFilter())
    return TrainFailServer(config, app.state.sessions, gate, on_ready)


def run(app: FastAPI, sock: socket.socket, budget: FdBudget, on_ready: Callable[[], None]) -> None:
    """Serve ``app`` on ``sock`` until SIGINT/SIGTERM (see the module docstring)."""
    make_server(app, Gate(budget.connections), on_ready).run(sockets=[sock])
