"""Memory and process-count limits through a cgroup (v1 or v2), where the kernel lets us.

Each sandboxed command runs in a fresh child cgroup of the cgroup this process is in. The
command joins it before ``exec`` (see :data:`JOIN_SCRIPT`), so every process it forks is
counted and can be killed as a group, even one that left the process group with ``setsid``.
When no writable cgroup hierarchy exists, :func:`cgroup_support` says why and commands run
without those limits.
"""

from __future__ import annotations

import contextlib
import functools
import os
import signal
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

ROOT = Path("/sys/fs/cgroup")

#: Runs as ``sh -c JOIN_SCRIPT sh PROCS_FILE... -- COMMAND...``: writes its own pid into each
#: ``cgroup.procs`` file, then execs the command, which inherits the membership.
JOIN_SCRIPT = 'while [ "$1" != "--" ]; do echo $$ > "$1" || exit 125; shift; done; shift; exec "$@"'


@dataclass(frozen=True)
class CgroupSupport:
    """Which cgroup layout is usable here (``version`` 0 when none, with the reason)."""

    version: int
    reason: str = ""


@functools.cache
def cgroup_support() -> CgroupSupport:
    """Probe once whether child cgroups with memory and pids limits can be made here."""
    try:
        probe = Cgroup.create(memory_bytes=None, pids=None, tag="probe")
    except OSError as exc:
        return CgroupSupport(0, f"cannot create a child cgroup under {ROOT}: {exc}")
    version = probe.version
    probe.remove()
    return CgroupSupport(version)


def _self_path(controller: str) -> str:
    """This process's cgroup path for a v1 controller ('' selects the v2 unified entry)."""
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        _, controllers, path = line.split(":", 2)
        if controller == "" and controllers == "":
            return path
        if controller and controller in controllers.split(","):
            return path
    raise OSError(f"no {controller or 'unified'} entry in /proc/self/cgroup")


def _is_v2() -> bool:
    return (ROOT / "cgroup.controllers").exists()


@dataclass
class Cgroup:
    """A child cgroup holding one sandboxed command and everything it forks."""

    version: int
    dirs: tuple[Path, ...]

    @classmethod
    def create(cls, *, memory_bytes: int | None, pids: int | None, tag: str = "cmd") -> Cgroup:
        """Make a child cgroup with the given limits; raises ``OSError`` when not permitted."""
        name = f"trainfail-{tag}-{uuid.uuid4().hex[:12]}"
        if _is_v2():
            directory = ROOT / _self_path("").lstrip("/") / name
            directory.mkdir()
            group = cls(2, (directory,))
            if memory_bytes is not None:
                group._write(directory / "memory.max", str(memory_bytes))
                group._write(directory / "memory.swap.max", "0", optional=True)
            if pids is not None:
                group._write(directory / "pids.max", str(pids))
            return group
        memory_dir = ROOT / "memory" / _self_path("memory").lstrip("/") / name
        pids_dir = ROOT / "pids" / _self_path("pids").lstrip("/") / name
        memory_dir.mkdir()
        try:
            pids_dir.mkdir()
        except OSError:
            memory_dir.rmdir()
            raise
        group = cls(1, (memory_dir, pids_dir))
        if memory_bytes is not None:
            group._write(memory_dir / "memory.limit_in_bytes", str(memory_bytes))
            group._write(memory_dir / "memory.memsw.limit_in_bytes", str(memory_bytes), optional=True)
        if pids is not None:
            group._write(pids_dir / "pids.max", str(pids))
        return group

    def _write(self, path: Path, value: str, optional: bool = False) -> None:
        try:
            path.write_text(value)
        except OSError:
            if not optional:
                self.remove()
                raise

    @property
    def procs_files(self) -> list[str]:
        """The ``cgroup.procs`` files a process writes its pid into to join."""
        return [str(d / "cgroup.procs") for d in self.dirs]

    def pids(self) -> list[int]:
        """Processes currently in the group."""
        try:
            text = (self.dirs[0] / "cgroup.procs").read_text()
        except OSError:
            return []
        return [int(p) for p in text.split()]

    def oom_killed(self) -> bool:
        """Whether the kernel's OOM killer acted inside this group."""
        events = self.dirs[0] / ("memory.events" if self.version == 2 else "memory.oom_control")
        try:
            for line in events.read_text().splitlines():
                key, _, value = line.partition(" ")
                if key == "oom_kill" and int(value) > 0:
                    return True
        except OSError:
            return False
        return False

    def kill_all(self, deadline_s: float = 5.0) -> None:
        """SIGKILL every process in the group until it is empty (or the deadline passes)."""
        kill_file = self.dirs[0] / "cgroup.kill"
        end = time.monotonic() + deadline_s
        pause = 0.0005  # the kernel usually reaps within a millisecond: poll fast, then back off
        while self.pids() and time.monotonic() < end:
            if self.version == 2 and kill_file.exists():
                with contextlib.suppress(OSError):
                    kill_file.write_text("1")
            else:
                for pid in self.pids():
                    with contextlib.suppress(ProcessLookupError, PermissionError):
                        os.kill(pid, signal.SIGKILL)
            time.sleep(pause)
            pause = min(pause * 2, 0.01)

    def remove(self) -> None:
        """Kill what is left and remove the group's directories."""
        self.kill_all()
        for directory in self.dirs:
            for _ in range(50):  # rmdir fails while the kernel still reaps the last tasks
                try:
                    directory.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.02)
