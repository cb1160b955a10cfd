"""The node-local device pool: GPUs, or CPU slots standing in for them.

Slots are lock files under the state directory, held with ``flock`` for the lifetime of a
lease, so every process on the node (episodes, graders, batch workers) shares one pool and a
crashed holder frees its slots automatically. A request larger than the pool is refused at
once; a request the pool can hold waits, and the wait is recorded.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from gym_trainfail.errors import ToolError, TrainFailError
from gym_trainfail.paths import devices_dir

_POLL_S = 0.05


@dataclass(frozen=True)
class Device:
    """One allocatable device: a GPU (``kind='gpu'``, ``index`` its host id) or a CPU slot."""

    kind: str
    index: int


def detect_gpus() -> list[int]:
    """Host GPU indices reported by ``nvidia-smi`` (empty without one)."""
    if shutil.which("nvidia-smi") is None:
        return []
    try:
        out = subprocess.run(
            ["nvidia-smi", "--query-gpu=index", "--format=csv,noheader"],
            capture_output=True, text=True, timeout=20, check=True,
        ).stdout  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        return []
    return [int(line) for line in out.split() if line.strip().isdigit()]


def default_cpu_slots() -> int:
    """CPU ranks the pool offers: ``$TRAINFAIL_CPU_SLOTS`` or max(4, cores)."""
    env = os.environ.get("TRAINFAIL_CPU_SLOTS")
    if env:
        return int(env)
    return max(4, os.cpu_count() or 1)


@dataclass
class Lease:
    """Devices held for one job, with the times the ledger needs."""

    devices: tuple[Device, ...]
    queued_at: float
    started_at: float
    released_at: float | None = None
    _handles: list[IO[str]] = field(default_factory=list, repr=False)

    @property
    def queue_wait_s(self) -> float:
        return self.started_at - self.queued_at

    @property
    def device_seconds(self) -> float:
        """Devices × how long they were held (start-up and clean-up included)."""
        end = self.released_at if self.released_at is not None else time.time()
        return len(self.devices) * (end - self.started_at)

    def release(self) -> None:
        if self.released_at is not None:
            return
        for handle in self._handles:
            with contextlib.suppress(OSError):
                fcntl.flock(handle, fcntl.LOCK_UN)
            handle.close()
        self._handles.clear()
        self.released_at = time.time()


class DevicePool:
    """Devices of one kind on this node, shared across processes through lock files."""

    def __init__(self, kind: str | None = None, count: int | None = None, root: Path | None = None) -> None:
        gpus = detect_gpus() if kind in (None, "gpu") else []
        if kind is None:
            kind = "gpu" if gpus else "cpu"
        if kind == "gpu":
            self.indices = gpus if count is None else gpus[:count]
        elif kind == "cpu":
            self.indices = list(range(count if count is not None else default_cpu_slots()))
        else:
            raise TrainFailError(f"unknown device kind {kind!r}; expected 'gpu' or 'cpu'")
        self.kind = kind
        self.root = (root or devices_dir()) / kind
        self.root.mkdir(parents=True, exist_ok=True)

    @property
    def size(self) -> int:
        return len(self.indices)

    def describe(self) -> str:
        noun = "GPU" if self.kind == "gpu" else "CPU slot"
        return f"{self.size} {noun}{'s' if self.size != 1 else ''}"

    def acquire(self, count: int, timeout_s: float | None = None) -> Lease:
        """Hold ``count`` devices, waiting while others hold them. Raises ``ToolError`` when
        the request can never be met, ``TimeoutError`` when ``timeout_s`` passes first."""
        if count < 1:
            raise ToolError(f"devices must be at least 1, got {count}")
        if count > self.size:
            raise ToolError(
                f"requested {count} devices but this node has {self.describe()}; ask for at most {self.size}"
            )
        queued_at = time.time()
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        while True:
            held = self._try_acquire(count)
            if held is not None:
                devices, handles = held
                return Lease(devices=devices, queued_at=queued_at, started_at=time.time(), _handles=handles)
            if deadline is not None and time.monotonic() > deadline:
                raise TimeoutError(f"{count} devices did not become free within {timeout_s:.0f} s")
            time.sleep(_POLL_S)

    def _try_acquire(self, count: int) -> tuple[tuple[Device, ...], list[IO[str]]] | None:
        handles: list[IO[str]] = []
        devices: list[Device] = []
        for index in self.indices:
            handle: IO[str] = (self.root / f"{index}.lock").open("w")
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                handle.close()
                continue
            handles.append(handle)
            devices.append(Device(self.kind, index))
            if len(devices) == count:
                return tuple(devices), handles
        for handle in handles:  # not enough free: give back what we took, all or nothing
            fcntl.flock(handle, fcntl.LOCK_UN)
            handle.close()
        return None

    @contextlib.contextmanager
    def lease(self, count: int, timeout_s: float | None = None) -> Iterator[Lease]:
        """``with pool.lease(n) as lease:`` — released on exit, whatever happens."""
        held = self.acquire(count, timeout_s)
        try:
            yield held
        finally:
            held.release()
