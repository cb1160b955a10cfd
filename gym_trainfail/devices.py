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
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from gym_trainfail.errors import ToolError, TrainFailError
from gym_trainfail.hardware import Device, allowed_gpu_ids, detect_gpus
from gym_trainfail.paths import devices_dir
from gym_trainfail.sandbox.gpu import bwrap_gpu_support

_POLL_S = 0.05


def gpu_support(backend: str | None) -> str | None:
    """``None`` if sandboxes of ``backend`` can show a job its leased GPUs, else why not.

    ``docker`` uses device requests, ``process`` runs on the host, ``bwrap`` binds the leased
    device nodes and the driver's libraries (it needs the control node and ``libcuda``).
    """
    if backend in (None, "docker", "process"):
        return None
    if backend == "bwrap":
        return bwrap_gpu_support()
    return f"the {backend!r} sandbox cannot expose GPUs"


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

    def __init__(
        self,
        kind: str | None = None,
        count: int | None = None,
        root: Path | None = None,
        *,
        backend: str | None = None,
        gpu_ids: Sequence[int] | None = None,
    ) -> None:
        """``kind=None`` picks GPUs when the host has some that this pool may lease (``gpu_ids``,
        else ``$TRAINFAIL_GPU_IDS``, restrict them) and ``backend``'s sandboxes can expose them
        (:func:`gpu_support`); otherwise CPU slots. :attr:`cpu_reason` says why not GPUs."""
        gpus = detect_gpus() if kind in (None, "gpu") else []
        allowed = set(gpu_ids) if gpu_ids is not None else allowed_gpu_ids()
        if allowed is not None:
            gpus = [g for g in gpus if g in allowed]
        self.backend = backend
        self.cpu_reason = ""
        if kind is None:
            unsupported = gpu_support(backend) if gpus else None
            if gpus and unsupported is None:
                kind = "gpu"
            else:
                kind = "cpu"
                self.cpu_reason = unsupported or "no GPU found (nvidia-smi)"
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

        def wait() -> None:
            if deadline is not None and time.monotonic() > deadline:
                raise TimeoutError(f"{count} devices did not become free within {timeout_s:.0f} s")
            time.sleep(_POLL_S)

        # One request at a time is at the head of the queue (it holds the pool's queue lock) and
        # takes devices as they free up; later requests wait behind it, so a wide request is never
        # starved by narrow ones taking each device as it frees up.
        with (self.root / "queue.lock").open("w") as queue:
            while not _try_flock(queue):
                wait()
            try:
                while (held := self._try_acquire(count)) is None:
                    wait()
            finally:
                fcntl.flock(queue, fcntl.LOCK_UN)
        devices, handles = held
        return Lease(devices=devices, queued_at=queued_at, started_at=time.time(), _handles=handles)

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


def _try_flock(handle: IO[str]) -> bool:
    """Take an exclusive lock on ``handle`` if no one holds it."""
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True
