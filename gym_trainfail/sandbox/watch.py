"""The host's own record of every access to the files an arm withholds or measures.

The hooks inside a sandbox (the control arm's blocker, the treatment arm's usage tracker) run in
the agent's processes: ``python -S`` skips them and ``env -u TRAINFAIL_AUDIT_FD`` silences them.
This watch depends on nothing inside the sandbox. Per episode, the host keeps a private copy of
the watched files (TrainCheck's package, commands and manual; in the control arm the decoy
package, the command stand-ins and the blocker's refusal markers), every sandbox of the episode
shows those copies read-only over the runtime's own paths, and the host reads inotify events
(open, read) on the copies while each command runs. inotify marks inodes, not paths, so an
access through any mount in any namespace of this machine is seen; a copy per episode keeps
concurrent episodes apart. Commands of one episode run one at a time, so what the watch saw
between :meth:`FileWatch.begin` and :meth:`FileWatch.collect` belongs to that command.

What it cannot see: a Docker engine on another machine (its bind mounts are other inodes), and
anything that never touches a watched file (``python -I -S`` with a computed module name finds
no TrainCheck at all; a copy made in an earlier command is seen when it is made, not when used).
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import os
import selectors
import shutil
import socket
import struct
import tempfile
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gym_trainfail.arms import Arm
from gym_trainfail.runtimes import DECOY_PACKAGE, REFUSALS_DIR, TRAINCHECK_COMMANDS, Runtime
from gym_trainfail.sandbox.base import Mount

IN_ACCESS = 0x00000001
IN_OPEN = 0x00000020
IN_Q_OVERFLOW = 0x00004000
IN_IGNORED = 0x00008000
IN_ISDIR = 0x40000000
_IN_NONBLOCK = os.O_NONBLOCK
_IN_CLOEXEC = os.O_CLOEXEC
_EVENT = struct.Struct("iIII")  # wd, mask, cookie, len (struct inotify_event)
#: Paths named per report (the count covers them all).
MAX_PATHS = 8


@dataclass(frozen=True)
class WatchedPath:
    """A file or folder the sandbox shows from the host's private copy, and what it is."""

    label: str
    #: The original on the host (the runtime's own file, or one under ``containers/``).
    source: Path
    #: Where the sandbox shows it: relative to the runtime's root when ``in_runtime``, else absolute.
    target: str
    in_runtime: bool


def arm_watched_paths(arm: Arm, runtime: Runtime) -> tuple[WatchedPath, ...]:
    """What the host watches in ``arm``'s sandboxes over ``runtime``."""
    root = runtime.root
    bin_dir = runtime.bin_dir.relative_to(root)
    # Labels: gym_trainfail.arms.USE_LABELS / BLOCKED_LABELS, and "manual".
    paths = [
        WatchedPath("shim" if arm.blocks_traincheck else "command", runtime.bin_dir / name, str(bin_dir / name), True)
        for name in TRAINCHECK_COMMANDS
    ]
    if arm.blocks_traincheck:
        paths += [
            WatchedPath("decoy", root / DECOY_PACKAGE, DECOY_PACKAGE, True),
            WatchedPath("refusal", root / REFUSALS_DIR, REFUSALS_DIR, True),
        ]
    else:
        package = runtime.site_packages / "traincheck"
        paths.append(WatchedPath("package", package, str(package.relative_to(root)), True))
    paths += [WatchedPath("manual", source, target, False) for source, target in arm.sandbox_files()]
    return tuple(paths)


class _Inotify:
    """A non-blocking inotify instance (libc through ctypes: no dependency)."""

    def __init__(self) -> None:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        self._add = libc.inotify_add_watch
        self._add.argtypes = (ctypes.c_int, ctypes.c_char_p, ctypes.c_uint32)
        self._add.restype = ctypes.c_int
        fd = libc.inotify_init1(_IN_NONBLOCK | _IN_CLOEXEC)
        if fd < 0:
            raise OSError(ctypes.get_errno(), f"inotify_init1: {os.strerror(ctypes.get_errno())}")
        self.fd: int = fd

    def add(self, path: Path, mask: int) -> int:
        wd = int(self._add(self.fd, os.fsencode(path), mask))
        if wd < 0:
            errno = ctypes.get_errno()
            raise OSError(errno, f"inotify_add_watch {path}: {os.strerror(errno)}")
        return wd

    def read(self) -> Iterator[tuple[int, int, str]]:
        """Every queued event as ``(wd, mask, name)``; stops when the queue is empty."""
        while self.fd >= 0:
            try:
                data = os.read(self.fd, 1 << 16)
            except BlockingIOError:
                return
            offset = 0
            while offset + _EVENT.size <= len(data):
                wd, mask, _, length = _EVENT.unpack_from(data, offset)
                name = data[offset + _EVENT.size : offset + _EVENT.size + length].rstrip(b"\0")
                offset += _EVENT.size + length
                yield wd, mask, os.fsdecode(name)

    def close(self) -> None:
        if self.fd >= 0:
            fd, self.fd = self.fd, -1
            os.close(fd)


class FileWatch:
    """Private copies of an episode's watched paths, their mounts, and the accesses to them.

    A thread drains the inotify queue as events arrive (the kernel's queue holds 16384 events by
    default; a command that reads a watched file in a loop would fill it between commands)."""

    def __init__(self, paths: Sequence[WatchedPath], parent: Path) -> None:
        parent.mkdir(parents=True, exist_ok=True)
        _reclaim_stale(parent)
        self.folder = Path(tempfile.mkdtemp(prefix=f"{_owner_prefix()}{os.getpid()}-", dir=parent))
        self._mounts: list[Mount] = []
        #: watch descriptor → (label, path shown in reports)
        self._where: dict[int, tuple[str, str]] = {}
        #: (label, access) → (events, first paths), since the last begin()
        self._seen: dict[tuple[str, str], tuple[int, list[str]]] = {}
        self._lock = threading.Lock()
        self._inotify: _Inotify | None = None
        self._thread: threading.Thread | None = None
        self._stop_r, self._stop_w = os.pipe()
        try:
            self._inotify = _Inotify()
            for index, watched in enumerate(paths):
                self._add(index, watched)
            self._thread = threading.Thread(target=self._drain_loop, name="trainfail-watch", daemon=True)
            self._thread.start()
        except BaseException:
            self.close()
            raise

    def _add(self, index: int, watched: WatchedPath) -> None:
        assert self._inotify is not None
        copy = self.folder / str(index) / watched.source.name
        copy.parent.mkdir()
        if watched.source.is_dir():
            shutil.copytree(watched.source, copy, symlinks=True)
            for directory, _, _ in os.walk(copy):
                shown = Path(watched.source.name) / Path(directory).relative_to(copy)
                wd = self._inotify.add(Path(directory), IN_OPEN | IN_ACCESS)
                self._where[wd] = (watched.label, shown.as_posix().removesuffix("/."))
        else:
            shutil.copy2(watched.source, copy)
            _portable_shebang(copy)
            wd = self._inotify.add(copy, IN_OPEN | IN_ACCESS)
            self._where[wd] = (watched.label, watched.source.name)
        self._mounts.append(Mount(copy, watched.target, in_runtime=watched.in_runtime))

    def mounts(self) -> tuple[Mount, ...]:
        """Read-only mounts of the copies over the paths they stand for."""
        return tuple(self._mounts)

    def begin(self) -> None:
        """Forget what happened between commands (container start-up, the host's own work)."""
        with self._lock:
            self._absorb()
            self._seen = {}

    def collect(self) -> list[dict[str, Any]]:
        """Accesses since :meth:`begin`, one report per (label, kind of access).

        A report is ``{"type": "access", "target": label, "access": "list"|"open"|"read"|"overflow",
        "count": events, "paths": [the first few paths]}``. ``count`` is a lower bound on accesses:
        the kernel merges identical consecutive events. ``overflow`` (target ``unknown``) means the
        kernel's queue filled: some accesses were not itemised (at least one happened).
        """
        with self._lock:
            self._absorb()
            seen, self._seen = self._seen, {}
        return [
            {"type": "access", "target": label, "access": access, "count": count, "paths": paths}
            for (label, access), (count, paths) in seen.items()
        ]

    def _drain_loop(self) -> None:
        assert self._inotify is not None
        with selectors.DefaultSelector() as selector:
            selector.register(self._inotify.fd, selectors.EVENT_READ)
            selector.register(self._stop_r, selectors.EVENT_READ)
            while True:
                ready = selector.select()
                if any(key.fd == self._stop_r for key, _ in ready):
                    return
                with self._lock:
                    self._absorb()

    def _absorb(self) -> None:
        """Fold every queued event into ``_seen`` (the caller holds the lock)."""
        if self._inotify is None:
            return
        for wd, mask, name in self._inotify.read():
            if mask & IN_Q_OVERFLOW:
                key, path = ("unknown", "overflow"), ""
            elif mask & IN_IGNORED or wd not in self._where:
                continue
            elif mask & IN_ISDIR and name:
                continue  # the subfolder's own watch reports it too
            else:
                label, shown = self._where[wd]
                access = "list" if mask & IN_ISDIR else ("read" if mask & IN_ACCESS else "open")
                key, path = (label, access), f"{shown}/{name}" if name else shown
            count, paths = self._seen.get(key, (0, []))
            if path and path not in paths and len(paths) < MAX_PATHS:
                paths.append(path)
            self._seen[key] = (count + 1, paths)

    def close(self) -> None:
        """Stop watching and remove the copies (idempotent)."""
        if self._thread is not None:
            os.write(self._stop_w, b"x")
            self._thread.join()
            self._thread = None
        for fd in (self._stop_r, self._stop_w):
            if fd >= 0:
                os.close(fd)
        self._stop_r = self._stop_w = -1
        with self._lock:
            if self._inotify is not None:
                self._inotify.close()
                self._inotify = None
        with contextlib.suppress(OSError):
            _make_writable(self.folder)
        shutil.rmtree(self.folder, ignore_errors=True)


def _portable_shebang(script: Path) -> None:
    """A console script's shebang names the host runtime's interpreter; a Docker image holds the
    runtime at another path. The copy runs whichever runtime's ``python`` the sandbox has on
    ``PATH`` (the runtime's own bin comes first in every backend)."""
    with script.open("rb") as handle:
        first = handle.readline(4096)
    if not first.startswith(b"#!") or not first.rstrip().endswith((b"/bin/python", b"/bin/python3")):
        return
    rest = script.read_bytes()[len(first) :]
    script.write_bytes(b"#!/usr/bin/env python\n" + rest)


def _owner_prefix() -> str:
    # The host name too: the state directory may be shared by the nodes of a cluster.
    return f"watch-{socket.gethostname()}-"


def _reclaim_stale(parent: Path) -> None:
    """Remove the copies of processes on this host that died without closing their watch."""
    prefix = _owner_prefix()
    for folder in parent.glob(f"{prefix}*"):
        pid = folder.name[len(prefix) :].split("-", 1)[0]
        if pid.isdigit() and not _alive(int(pid)):
            shutil.rmtree(folder, ignore_errors=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _make_writable(root: Path) -> None:
    # The runtime's files are read-only (runtimes seal them); their copies must be removable.
    for directory, _, _ in os.walk(root):
        os.chmod(directory, 0o755)
