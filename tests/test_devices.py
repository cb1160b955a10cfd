"""The device pool: all-or-nothing leases, queueing across processes, refusals."""

from __future__ import annotations

import multiprocessing
import time
from pathlib import Path

import pytest

from gym_trainfail.devices import DevicePool
from gym_trainfail.errors import ToolError


def test_lease_records_devices_and_seconds(tmp_path: Path) -> None:
    pool = DevicePool("cpu", 3, root=tmp_path)
    with pool.lease(2) as lease:
        assert [d.index for d in lease.devices] == [0, 1]
        time.sleep(0.05)
    assert lease.released_at is not None
    assert lease.device_seconds >= 2 * 0.05
    assert lease.queue_wait_s < 0.05


def test_request_larger_than_pool_is_refused(tmp_path: Path) -> None:
    pool = DevicePool("cpu", 2, root=tmp_path)
    with pytest.raises(ToolError, match="requested 3 devices but this node has 2 CPU slots"):
        pool.acquire(3)


def test_busy_pool_times_out_then_frees(tmp_path: Path) -> None:
    pool = DevicePool("cpu", 2, root=tmp_path)
    held = pool.acquire(2)
    with pytest.raises(TimeoutError):
        pool.acquire(1, timeout_s=0.2)
    held.release()
    assert len(pool.acquire(2, timeout_s=1).devices) == 2


def test_a_wide_request_is_not_starved_by_narrow_ones(tmp_path: Path) -> None:
    """A request for the whole pool waits at the head of the queue: a narrow request made after
    it waits behind it, though devices it could take are free."""
    import threading

    pool = DevicePool("cpu", 4, root=tmp_path)
    order: list[str] = []

    def take(name: str, count: int) -> None:
        with pool.lease(count, timeout_s=30):
            order.append(name)
            time.sleep(0.1)

    held = pool.acquire(2)  # two of four busy
    wide = threading.Thread(target=take, args=("wide", 4))
    wide.start()
    time.sleep(0.3)  # the wide request is queued
    narrow = threading.Thread(target=take, args=("narrow", 2))
    narrow.start()
    time.sleep(0.3)
    assert order == []  # two devices are free, but the narrow request waits behind the wide one
    held.release()
    wide.join(30)
    narrow.join(30)
    assert order == ["wide", "narrow"]


def test_a_request_queued_behind_another_times_out(tmp_path: Path) -> None:
    import threading

    pool = DevicePool("cpu", 2, root=tmp_path)
    held = pool.acquire(2)
    waiting = threading.Thread(target=lambda: pool.acquire(2, timeout_s=30).release())
    waiting.start()
    time.sleep(0.2)
    with pytest.raises(TimeoutError, match="1 devices did not become free within 0 s"):
        pool.acquire(1, timeout_s=0.2)
    held.release()
    waiting.join(30)
    assert not waiting.is_alive()


def _hold(root: str, seconds: float, ready: multiprocessing.synchronize.Event) -> None:
    pool = DevicePool("cpu", 2, root=Path(root))
    with pool.lease(2):
        ready.set()
        time.sleep(seconds)


def test_queue_wait_is_recorded_across_processes(tmp_path: Path) -> None:
    ctx = multiprocessing.get_context("spawn")
    ready = ctx.Event()
    other = ctx.Process(target=_hold, args=(str(tmp_path), 1.0, ready))
    other.start()
    assert ready.wait(30)
    lease = DevicePool("cpu", 2, root=tmp_path).acquire(1, timeout_s=30)
    other.join()
    lease.release()
    assert lease.queue_wait_s > 0.5
