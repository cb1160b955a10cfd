"""Limits before authentication: what a client without the token can hold of the server.

A TCP connection is *guarded* from the moment it is accepted until its request's headers are in
(then the token decides at once: refused requests get an answer and the connection is closed; a
WebSocket with the token becomes a session, bounded by ``--max-sessions``). For guarded
connections:

- **Header timeout.** A connection whose request line and headers are not complete within
  :data:`HEADER_TIMEOUT_S` is dropped (uvicorn itself never times out half-sent requests).
- **A cap.** At most :attr:`FdBudget.connections` are guarded at once. When the cap is reached,
  a new connection evicts the oldest one still sending its request, so a flood of half-open
  sockets cannot keep a client that sends its request at once from connecting.
- **File descriptors in reserve.** The cap comes from the open-file limit: every session keeps
  :data:`FDS_PER_SESSION` descriptors for its ledger, transcript, sandboxes and grading, so a
  flood can never make an open episode's files fail with EMFILE. The server refuses to start when
  the limit leaves too little room (raise ``ulimit -n`` or lower ``--max-sessions``).
- **Quiet logs.** Dropped connections, failed ``accept()`` calls and repeated uvicorn warnings are
  logged as one line per :data:`LOG_INTERVAL_S` with counts, never a line (or a traceback) each.

HTTP responses carry ``Connection: close``: no keep-alive connection outlives its one request.
"""

from __future__ import annotations

import asyncio
import logging
import os
import resource
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

from gym_trainfail.errors import TrainFailError

log = logging.getLogger("gym_trainfail.serve")

#: Seconds a connection may take to send its request line and headers.
HEADER_TIMEOUT_S: Final = 10.0
#: Descriptors kept for each session (its socket, ledger, transcript, sandbox pipes, grading).
FDS_PER_SESSION: Final = 64
#: Descriptors kept for the server itself beyond those open at start (logs, executors, imports).
FDS_SPARE: Final = 64
#: Connections accepted per wake-up of the event loop (uvicorn's ``backlog``): a burst of new
#: sockets is at most this many before evicted ones are closed.
ACCEPT_BATCH: Final = 16
#: Bursts in flight that the budget leaves room for.
ACCEPT_BURSTS: Final = 4
#: The kernel's queue of connections not yet accepted (costs the server no descriptor).
LISTEN_BACKLOG: Final = 1024
#: Guarded connections are never allowed more than this many, whatever the open-file limit.
MAX_GUARDED: Final = 512
#: Fewest guarded connections worth serving with.
MIN_GUARDED: Final = 16
#: Seconds between two log lines about dropped connections or repeated warnings.
LOG_INTERVAL_S: Final = 60.0


@dataclass(frozen=True)
class FdBudget:
    """How the open-file limit is shared: sessions' reserve, the server's, guarded connections."""

    open_files: int
    in_use: int
    max_sessions: int
    connections: int

    def describe(self) -> str:
        return (
            f"open-file limit {self.open_files}: {self.in_use} in use at start, "
            f"{self.max_sessions} x {FDS_PER_SESSION} kept for sessions, up to {self.connections} connections "
            f"sending their request at once (each dropped after {HEADER_TIMEOUT_S:g} s)"
        )


def fd_budget(max_sessions: int, open_files: int | None = None, in_use: int | None = None) -> FdBudget:
    """The budget for ``max_sessions`` under this process's open-file limit; a
    :class:`TrainFailError` saying what to change when the limit is too low."""
    if open_files is None:
        soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
        open_files = soft if soft != resource.RLIM_INFINITY else 1 << 20
    if in_use is None:
        try:
            in_use = len(os.listdir("/proc/self/fd")) - 1  # less the listing's own descriptor
        except OSError:  # no /proc: assume a typical count
            in_use = 64
    reserved = in_use + max_sessions * FDS_PER_SESSION + FDS_SPARE + ACCEPT_BATCH * ACCEPT_BURSTS
    connections = min(MAX_GUARDED, open_files - reserved)
    if connections < MIN_GUARDED:
        needed = reserved + MIN_GUARDED
        raise TrainFailError(
            f"the open-file limit is {open_files}, and {max_sessions} session(s) need at least {needed} "
            f"({FDS_PER_SESSION} per session kept so an episode's files never fail with EMFILE, plus "
            f"{MIN_GUARDED} connections); raise it (ulimit -n {max(needed, 1024)}) or lower --max-sessions"
        )
    return FdBudget(open_files=open_files, in_use=in_use, max_sessions=max_sessions, connections=connections)


class Tally:
    """Counts of things not worth a log line each; one summary line per :data:`LOG_INTERVAL_S`."""

    def __init__(self, what: str, interval_s: float = LOG_INTERVAL_S) -> None:
        self.what = what
        self.interval_s = interval_s
        self.counts: Counter[str] = Counter()
        self.total: Counter[str] = Counter()
        self._last = -interval_s
        self._flush: asyncio.TimerHandle | None = None

    def note(self, kind: str, loop: asyncio.AbstractEventLoop | None = None) -> None:
        """Count one ``kind``; log now if the interval has passed, else once it has."""
        self.counts[kind] += 1
        self.total[kind] += 1
        now = time.monotonic()
        if now - self._last >= self.interval_s:
            self.emit()
        elif loop is not None and self._flush is None:
            self._flush = loop.call_later(self._last + self.interval_s - now, self.emit)

    def emit(self) -> None:
        self._flush = None
        if not self.counts:
            return
        self._last = time.monotonic()
        parts = ", ".join(f"{n} {kind}" for kind, n in sorted(self.counts.items()))
        self.counts.clear()
        log.warning("%s: %s (at most one such line per %g s)", self.what, parts, self.interval_s)


class Gate:
    """The guarded connections of one server (event-loop thread only)."""

    def __init__(self, limit: int, header_timeout_s: float = HEADER_TIMEOUT_S) -> None:
        self.limit = limit
        self.header_timeout_s = header_timeout_s
        self.tally = Tally("connections dropped before sending a request")
        # Insertion-ordered: the first one still sending its request is the oldest.
        self._guarded: dict[GuardedH11Protocol, None] = {}
        self._sending: dict[GuardedH11Protocol, None] = {}

    @property
    def guarded(self) -> int:
        return len(self._guarded)

    def admit(self, connection: GuardedH11Protocol) -> bool:
        """Take ``connection`` in, evicting the oldest one still sending its request when full;
        False (drop it) when every guarded connection has sent its request already."""
        if len(self._guarded) >= self.limit:
            oldest = next(iter(self._sending), None)
            if oldest is None:
                self.tally.note(f"refused (all {self.limit} connection slots busy)", connection.loop)
                return False
            self.tally.note(f"evicted (over {self.limit} connections sending a request)", connection.loop)
            oldest.drop()
        self._guarded[connection] = None
        self._sending[connection] = None
        return True

    def request_in(self, connection: GuardedH11Protocol) -> None:
        self._sending.pop(connection, None)

    def leave(self, connection: GuardedH11Protocol) -> None:
        self._sending.pop(connection, None)
        self._guarded.pop(connection, None)

    def timed_out(self, connection: GuardedH11Protocol) -> None:
        self.tally.note(f"timed out (no complete request within {self.header_timeout_s:g} s)", connection.loop)


class GuardedH11Protocol(H11Protocol):
    """uvicorn's HTTP/1.1 protocol under a :class:`Gate` (see the module docstring)."""

    gate: Gate  # set on the subclass :func:`guarded_protocol` makes for one server

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._header_timer: asyncio.TimerHandle | None = None
        self._guarded = False

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        if not self.gate.admit(self):
            self.connections.discard(self)
            transport.abort()
            return
        self._guarded = True
        self._header_timer = self.loop.call_later(self.gate.header_timeout_s, self._header_timeout)

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        if self._header_timer is not None and self.headers is not None:  # the request line and headers are in
            self._header_timer.cancel()
            self._header_timer = None
            self.gate.request_in(self)

    def handle_websocket_upgrade(self, event: h11.Request) -> None:
        # From here the connection is a WebSocket: refused at once without the token, else a session.
        self._leave()
        super().handle_websocket_upgrade(event)

    def connection_lost(self, exc: Exception | None) -> None:
        self._leave()
        super().connection_lost(exc)

    def drop(self) -> None:
        """Close at once (RST), freeing the descriptor on the loop's next turn."""
        self._leave()
        self.transport.abort()

    def _header_timeout(self) -> None:
        self._header_timer = None
        self.gate.timed_out(self)
        self.drop()

    def _leave(self) -> None:
        if self._header_timer is not None:
            self._header_timer.cancel()
            self._header_timer = None
        if self._guarded:
            self._guarded = False
            self.gate.leave(self)


def guarded_protocol(gate: Gate) -> type[GuardedH11Protocol]:
    """The protocol class for one server (uvicorn's ``http=``), bound to its gate."""
    return type("GuardedH11Protocol", (GuardedH11Protocol,), {"gate": gate})


class RepeatFilter(logging.Filter):
    """Lets each distinct message template through once per interval; counts the rest."""

    def __init__(self, interval_s: float = LOG_INTERVAL_S) -> None:
        super().__init__()
        self.interval_s = interval_s
        self._last: dict[str, float] = {}
        self._suppressed: Counter[str] = Counter()

    def filter(self, record: logging.LogRecord) -> bool:
        key = str(record.msg)[:200]
        now = time.monotonic()
        last = self._last.get(key)
        if last is not None and now - last < self.interval_s:
            self._suppressed[key] += 1
            return False
        self._last[key] = now
        suppressed = self._suppressed.pop(key, 0)
        if suppressed and last is not None:
            record.msg = f"{record.msg} ({suppressed} more like it in the last {now - last:.0f} s)"
        return True


def accept_error_handler(tally: Tally) -> Callable[[asyncio.AbstractEventLoop, dict[str, Any]], None]:
    """An event-loop exception handler that counts failed ``accept()`` calls (EMFILE, ENFILE,
    ENOBUFS) in ``tally`` instead of logging a traceback each; anything else as asyncio would."""

    def handle(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        message = str(context.get("message", ""))
        if message.startswith("socket.accept() out of system resource"):
            exc = context.get("exception")
            tally.note(f"accept() failed ({getattr(exc, 'strerror', None) or exc})", loop)
            return
        loop.default_exception_handler(context)

    return handle
