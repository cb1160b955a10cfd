"""The Docker engine as gym-trainfail uses it: connecting, raw exec/attach streams, owners, reaping.

One place turns "no engine" into what to do: :func:`connect` catches both ways the SDK reports
a missing engine (``docker.errors.DockerException`` from version negotiation, and a bare
``requests.exceptions.ConnectionError`` from a client built with a fixed version) and raises
:class:`~gym_trainfail.errors.SandboxUnavailableError` naming ``DOCKER_HOST`` and bubblewrap.

Sandbox containers carry labels saying which host process owns them. A container whose owner
process is gone is *stale*: :func:`reap_stale` removes those, and :func:`track` removes a
process's own containers at exit and on ``SIGTERM``. (Containers also remove themselves when
their owner dies; see ``containers/sandbox_init.py``.)
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import json
import os
import signal
import socket
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from urllib.parse import quote, urlencode

import docker
import docker.errors
import requests.exceptions
from docker.models.containers import Container

from gym_trainfail.errors import SandboxLostError, SandboxUnavailableError

#: Label namespace of everything gym-trainfail creates in an engine.
LABEL = "org.gym-trainfail"
SANDBOX_LABEL = f"{LABEL}.sandbox"
OWNER_LABEL = f"{LABEL}.owner"
CTL_LABEL = f"{LABEL}.ctl"
DEFAULT_HOST = "unix:///var/run/docker.sock"

ENGINE_HINT = (
    "start a Docker engine and point DOCKER_HOST at it (as root on Debian/Ubuntu: "
    '`export DOCKER_HOST="$(scripts/start-dockerd.sh)"`, or `systemctl start docker`), '
    "or use sandbox='bwrap' (bubblewrap, no engine needed)"
)

#: A missing engine must be reported quickly; a working one may take long to answer a build.
_CONNECT_TIMEOUT_S = 15
_API_TIMEOUT_S = 900
#: Stream numbers of the engine's multiplexed stdout/stderr protocol.
STDOUT, STDERR = 1, 2
_HEADER = 8


def docker_host() -> str:
    """The engine address the SDK will use: ``$DOCKER_HOST`` or the default unix socket."""
    return os.environ.get("DOCKER_HOST") or DEFAULT_HOST


@dataclass(frozen=True)
class Engine:
    """A connected engine: the SDK client and the address it answers on."""

    client: docker.DockerClient
    host: str

    @property
    def api_version(self) -> str:
        return str(self.client.api.api_version)


def _unreachable(host: str, exc: BaseException) -> SandboxUnavailableError:
    reason = str(exc).splitlines()[0][:300] if str(exc) else type(exc).__name__
    return SandboxUnavailableError(f"no Docker engine answers at DOCKER_HOST={host!r} ({reason}); {ENGINE_HINT}")


@functools.cache
def _connect(host: str, pid: int) -> Engine:
    del pid  # part of the cache key only: a client must not be shared across fork()
    try:
        client = docker.from_env(timeout=_CONNECT_TIMEOUT_S)
        client.ping()
    except (docker.errors.DockerException, requests.exceptions.ConnectionError) as exc:
        raise _unreachable(host, exc) from None
    client.api.timeout = _API_TIMEOUT_S  # image builds run minutes between two lines of output
    return Engine(client=client, host=host)


def connect() -> Engine:
    """The engine at ``$DOCKER_HOST``; :class:`SandboxUnavailableError` (with what to do) if none answers."""
    host = docker_host()
    try:
        return _connect(host, os.getpid())
    except SandboxUnavailableError:
        _connect.cache_clear()  # a later call may find an engine started since
        raise


def engine_errors() -> tuple[type[BaseException], ...]:
    """The exceptions that mean the engine (not the sandboxed command) failed."""
    return (docker.errors.DockerException, requests.exceptions.ConnectionError)


# -- raw hijacked streams ----------------------------------------------------------------------


class FrameDecoder:
    """Splits the engine's multiplexed stream (8-byte header: stream, 0, 0, 0, size) into frames."""

    def __init__(self) -> None:
        self._buffer = bytearray()

    def feed(self, data: bytes) -> list[tuple[int, bytes]]:
        """Add received bytes; return every complete ``(stream, payload)`` frame."""
        self._buffer += data
        frames = []
        while len(self._buffer) >= _HEADER:
            size = int.from_bytes(self._buffer[4:_HEADER], "big")
            if len(self._buffer) < _HEADER + size:
                break
            frames.append((self._buffer[0], bytes(self._buffer[_HEADER : _HEADER + size])))
            del self._buffer[: _HEADER + size]
        return frames


class RawStream:
    """An engine connection upgraded to a raw stream (``exec start`` or ``attach``).

    Opened by hand rather than through the SDK because the SDK's HTTP layer reads the upgrade
    response through a buffer and may swallow the first bytes of the stream with it; here the
    response head is read exactly and whatever followed it is kept.
    """

    def __init__(self, sock: socket.socket, leftover: bytes) -> None:
        self.sock = sock
        self.decoder = FrameDecoder()
        self._pending = self.decoder.feed(leftover)
        self.closed = False

    def fileno(self) -> int:
        return self.sock.fileno()

    def read_frames(self) -> list[tuple[int, bytes]] | None:
        """Frames available now (call when readable); ``None`` once the engine closed the stream."""
        frames, self._pending = self._pending, []
        try:
            chunk = self.sock.recv(65536)
        except BlockingIOError:
            return frames
        except OSError:
            chunk = b""
        if not chunk:
            self.closed = True
            return frames or None
        return frames + self.decoder.feed(chunk)

    def send_stdin(self, data: bytes, timeout_s: float = 30.0) -> None:
        """Write ``data`` to the process's stdin, then close it (the process sees EOF).

        Written before any output is read: meant for the small inputs tools pass."""
        self.sock.settimeout(timeout_s)
        with contextlib.suppress(OSError):
            self.sock.sendall(data)
        with contextlib.suppress(OSError):
            self.sock.shutdown(socket.SHUT_WR)
        self.sock.setblocking(False)

    def close(self) -> None:
        self.closed = True
        with contextlib.suppress(OSError):
            self.sock.close()


def _open_socket(host: str) -> socket.socket:
    if host.startswith("unix://"):
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.connect(host[len("unix://") :])
        return sock
    if host.startswith("tcp://") and not os.environ.get("DOCKER_TLS_VERIFY"):
        address, _, port = host[len("tcp://") :].rstrip("/").rpartition(":")
        return socket.create_connection((address, int(port)))
    raise SandboxUnavailableError(
        f"docker sandboxes need an engine on this machine (they bind-mount host workspaces), reached through a "
        f"unix socket or plain tcp; DOCKER_HOST={host!r} is neither. {ENGINE_HINT}"
    )


def open_stream(engine: Engine, path: str, *, query: dict[str, str] | None = None, body: object = None) -> RawStream:
    """POST ``path`` with ``Upgrade: tcp`` and return the raw stream that follows the answer.

    Raises :class:`SandboxLostError` when the engine answers 404/409 (the container or exec is
    gone or stopped), :class:`SandboxUnavailableError` on any other refusal.
    """
    payload = json.dumps(body).encode() if body is not None else b""
    target = f"/v{engine.api_version}{path}" + (f"?{urlencode(query)}" if query else "")
    head = (
        f"POST {target} HTTP/1.1\r\nHost: docker\r\nUser-Agent: gym-trainfail\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(payload)}\r\n"
        "Connection: Upgrade\r\nUpgrade: tcp\r\n\r\n"
    )
    try:
        sock = _open_socket(engine.host)
        sock.sendall(head.encode() + payload)
        status, rest = _read_head(sock)
    except OSError as exc:
        raise _unreachable(engine.host, exc) from None
    if status in (101, 200):
        sock.setblocking(False)
        return RawStream(sock, rest)
    sock.close()
    message = rest.decode("utf-8", "replace").strip()[:300]
    if status in (404, 409):
        raise SandboxLostError(f"the sandbox container is gone or stopped (engine answered {status}: {message})")
    raise SandboxUnavailableError(f"the Docker engine refused {path} ({status}: {message})")


def _read_head(sock: socket.socket) -> tuple[int, bytes]:
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(4096)
        if not chunk:
            raise ConnectionError("the engine closed the connection before answering")
        data += chunk
        if len(data) > 65536:
            raise ConnectionError("the engine's answer has no end of header")
    head, _, rest = data.partition(b"\r\n\r\n")
    status = int(head.split(b"\r\n", 1)[0].split()[1])
    return status, rest


def container_path(container_id: str, action: str) -> str:
    """``/containers/<id>/<action>`` with the id quoted."""
    return f"/containers/{quote(container_id)}/{action}"


# -- owners, cleanup and reaping ---------------------------------------------------------------


def _start_time(pid: int) -> str | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat.rsplit(")", 1)[1].split()[19]  # field 22: start time in clock ticks since boot


def owner_label() -> str:
    """``host:pid:start-time`` of this process (the start time tells a reused pid apart)."""
    return f"{socket.gethostname()}:{os.getpid()}:{_start_time(os.getpid()) or '?'}"


def owner_alive(label: str) -> bool:
    """Whether the process an owner label names still runs (always True for another host's)."""
    host, _, rest = label.partition(":")
    pid_text, _, start = rest.partition(":")
    if host != socket.gethostname() or not pid_text.isdigit():
        return True
    current = _start_time(int(pid_text))
    return current is not None and (start in ("?", "") or current == start)


Cleanup = Callable[[], None]
_live: dict[str, Cleanup] = {}
_lock = threading.Lock()
_reaped_hosts: set[str] = set()


def track(name: str, cleanup: Cleanup) -> None:
    """Remember a container this process created; it is removed at exit or on SIGTERM."""
    with _lock:
        first = not _live and not _hooks_installed
        _live[name] = cleanup
    if first:
        _install_hooks()


def untrack(name: str) -> None:
    """Forget a container that was removed."""
    with _lock:
        _live.pop(name, None)


def cleanup_all() -> None:
    """Remove every container this process still holds (atexit and signal hook)."""
    with _lock:
        pending = list(_live.values())
        _live.clear()
    for cleanup in pending:
        with contextlib.suppress(Exception):
            cleanup()


_hooks_installed = False


def _install_hooks() -> None:
    global _hooks_installed
    _hooks_installed = True
    atexit.register(cleanup_all)
    if threading.current_thread() is not threading.main_thread():
        return
    if signal.getsignal(signal.SIGTERM) is signal.SIG_DFL:
        signal.signal(signal.SIGTERM, _on_sigterm)


def _on_sigterm(signum: int, frame: FrameType | None) -> None:
    """Remove our containers, then die of SIGTERM as the process would have without us."""
    del frame
    cleanup_all()
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)


def sandbox_containers(engine: Engine) -> list[Container]:
    """Every gym-trainfail sandbox container in the engine, running or not."""
    return list(engine.client.containers.list(all=True, filters={"label": SANDBOX_LABEL}))


#: A file in each channel folder naming the process that made it.
OWNER_FILE = "owner"


def reap_stale(engine: Engine, ctl_root: Path | None = None, *, force: bool = False) -> list[str]:
    """Remove sandbox containers, and channel folders under ``ctl_root``, whose owner process is
    gone (once per process unless ``force``). Returns the names of the containers removed."""
    if engine.host in _reaped_hosts and not force:
        return []
    _reaped_hosts.add(engine.host)
    removed = []
    for container in sandbox_containers(engine):
        labels = container.labels or {}
        if owner_alive(labels.get(OWNER_LABEL, "")):
            continue
        with contextlib.suppress(*engine_errors()):
            container.remove(force=True)
            removed.append(container.name or container.id or "?")
        ctl = labels.get(CTL_LABEL)
        if ctl:
            remove_ctl_dir(Path(ctl))
    for folder in sorted(ctl_root.iterdir()) if ctl_root is not None and ctl_root.is_dir() else ():
        with contextlib.suppress(OSError):  # a container that removed itself when its owner died
            if not owner_alive((folder / OWNER_FILE).read_text()):
                remove_ctl_dir(folder)
    return removed


def remove_ctl_dir(path: Path) -> None:
    """Delete a container's host-side channel folder (its FIFOs and owner file; never follows links)."""
    if not path.is_dir() or path.is_symlink():
        return
    for entry in path.iterdir():
        with contextlib.suppress(OSError):
            entry.unlink()
    with contextlib.suppress(OSError):
        path.rmdir()


def iter_lines(data: bytes, carry: bytearray) -> Iterator[str]:
    """Complete text lines of a byte stream received in pieces (``carry`` keeps the rest)."""
    carry += data
    while b"\n" in carry:
        line, _, rest = bytes(carry).partition(b"\n")
        carry[:] = rest
        yield line.decode("utf-8", "replace")
