"""The Ray runner: each attempt is a Ray task with resource requests, on whichever node has room.

The task plays the episode in a node-local folder (in that node's Docker/bwrap sandbox, with
that node's device pool) and returns the whole episode folder packed; the driver unpacks it
into the run directory, so a batch on a cluster ends with the same layout as a local one.
A task whose worker dies (killed, node lost) is an infrastructure failure and is retried by
the driver, not by Ray, so every attempt is recorded.
"""

from __future__ import annotations

import contextlib
import importlib
import io
import os
import shutil
import socket
import tarfile
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from gym_trainfail.batch.layout import RunLayout
from gym_trainfail.batch.plan import PlannedEpisode
from gym_trainfail.batch.worker import AttemptResult, execute_attempt
from gym_trainfail.errors import TrainFailError
from gym_trainfail.hardware import GPU_IDS_ENV


def load_ray() -> Any:
    """The ``ray`` module (an optional extra), or an error that says how to install it."""
    try:
        return importlib.import_module("ray")
    except ImportError:
        raise TrainFailError("the Ray runner needs Ray: pip install 'gym-trainfail[ray]'") from None


#: Node-local scratch folders of running tasks: ``trainfail-ray-<worker pid>-<random>``.
SCRATCH_PREFIX = "trainfail-ray-"
#: Environment a local private cluster's workers need to find the same state and device pool.
FORWARDED_ENV = ("TRAINFAIL_HOME", "TRAINFAIL_CPU_SLOTS", "PYTHONPATH")


def play_remote(
    planned: Mapping[str, Any], sandbox: str, agent_options: Mapping[str, Any]
) -> tuple[dict[str, Any], bytes]:
    """The task body: play one attempt on this node, return its result and the packed episode."""
    episode = PlannedEpisode(**planned)
    reap_scratch()
    scratch = Path(tempfile.mkdtemp(prefix=f"{SCRATCH_PREFIX}{os.getpid()}-"))
    try:
        run_dir = scratch / episode.id
        with ray_assigned_gpus(load_ray().get_gpu_ids()):
            result = execute_attempt(episode, run_dir, sandbox=sandbox, agent_options=agent_options)
        return result.to_json(), pack(run_dir) if run_dir.exists() else b""
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


@contextlib.contextmanager
def ray_assigned_gpus(ids: Sequence[Any]) -> Iterator[None]:
    """While the task runs, the node's device pool may lease exactly the GPUs Ray assigned to it
    (none when it reserved none), through ``$TRAINFAIL_GPU_IDS``; the worker process is reused,
    so the previous value is restored afterwards."""
    previous = os.environ.get(GPU_IDS_ENV)
    os.environ[GPU_IDS_ENV] = ",".join(str(int(i)) for i in ids)
    try:
        yield
    finally:
        if previous is None:
            os.environ.pop(GPU_IDS_ENV, None)
        else:
            os.environ[GPU_IDS_ENV] = previous


def reap_scratch() -> None:
    """Remove scratch folders of tasks whose worker process died (a killed worker cannot clean
    up). Runs before every task on a node, and on the driver's node when a batch ends."""
    for folder in Path(tempfile.gettempdir()).glob(f"{SCRATCH_PREFIX}*-*"):
        pid = folder.name[len(SCRATCH_PREFIX) :].split("-", 1)[0]
        if pid.isdigit() and not _running(int(pid)):
            shutil.rmtree(folder, ignore_errors=True)


def _running(pid: int) -> bool:
    """Whether process ``pid`` exists and has not exited (a zombie awaiting its parent has)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[-1].split()[0] != "Z"


def pack(folder: Path) -> bytes:
    """A folder as a gzipped tar (its contents at the archive root)."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        archive.add(folder, arcname=".")
    return buffer.getvalue()


def unpack(data: bytes, target: Path) -> None:
    """Unpack what :func:`pack` made into the new folder ``target``."""
    target.mkdir(parents=True, exist_ok=False)
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as archive:
        archive.extractall(target, filter="data")


class RayRunner:
    """Attempts as Ray tasks on a cluster (or on a private local one)."""

    name = "ray"

    def __init__(
        self,
        layout: RunLayout,
        address: str,
        *,
        workers: int | None = None,
        sandbox: str = "auto",
        agent_options: Mapping[str, Mapping[str, Any]] | None = None,
        cpus_per_episode: float = 1.0,
    ) -> None:
        ray = self.ray = load_ray()
        self.layout = layout
        self.sandbox = sandbox
        self.agent_options = dict(agent_options or {})
        self.cpus_per_episode = cpus_per_episode
        self._owns_cluster = not ray.is_initialized()
        if self._owns_cluster:
            _connect(ray, address, workers)
        resources = ray.cluster_resources()
        self.gpus = float(resources.get("GPU", 0.0))
        cpus = float(resources.get("CPU", 1.0))
        self.slots = workers or max(1, int(cpus // cpus_per_episode))
        self._task = ray.remote(play_remote)
        self._pending: dict[Any, tuple[str, int, float]] = {}

    def start(self, planned: PlannedEpisode, attempt: int) -> int | None:
        """Submit one attempt as a task: one CPU, and the case's devices as GPUs where the cluster has them."""
        options: dict[str, Any] = {"num_cpus": self.cpus_per_episode, "max_retries": 0}
        if self.gpus >= planned.devices:
            options["num_gpus"] = planned.devices
        ref = self._task.options(**options).remote(
            asdict(planned), self.sandbox, dict(self.agent_options.get(planned.agent) or {})
        )
        self._pending[ref] = (planned.id, attempt, time.time())
        return None

    def wait(self, timeout_s: float) -> list[tuple[str, int, AttemptResult]]:
        """Tasks that finished within ``timeout_s``; their episodes are unpacked into the run directory."""
        if not self._pending:
            return []
        ready, _ = self.ray.wait(list(self._pending), num_returns=1, timeout=timeout_s)
        return [self._collect(ref) for ref in ready]

    def _collect(self, ref: Any) -> tuple[str, int, AttemptResult]:
        episode, attempt, started = self._pending.pop(ref)
        try:
            data, packed = self.ray.get(ref)
        except self.ray.exceptions.RayError as exc:
            reason = f"Ray task failed ({type(exc).__name__}): {str(exc).splitlines()[0][:500]}"
            return episode, attempt, AttemptResult("infra", reason, started, time.time(), "", 0)
        result = AttemptResult.from_json(data)
        if packed:
            target = self.layout.episode(episode)
            if target.exists():
                shutil.rmtree(target)
            unpack(packed, target)
        return episode, attempt, result

    def close(self) -> None:
        """Cancel unfinished tasks; shut down the cluster if this runner started it."""
        for ref in list(self._pending):
            self.ray.cancel(ref, force=True)
        self._pending.clear()
        if self._owns_cluster:
            self.ray.shutdown()
            reap_scratch()  # the private cluster ran on this node; its killed workers are gone now


def _connect(ray: Any, address: str, workers: int | None) -> None:
    """``local``: a private cluster on this machine (never touches other Ray processes);
    anything else (``auto``, ``ray://host:10001``, ``host:6379``): an existing cluster."""
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    if address == "local":
        env = {k: os.environ[k] for k in FORWARDED_ENV if k in os.environ}
        ray.init(
            num_cpus=workers or os.cpu_count() or 1,
            include_dashboard=False,
            runtime_env={"env_vars": env},
            log_to_driver=False,
        )
        return
    ray.init(address=address, log_to_driver=False)


def describe_cluster() -> str:
    """One line about the connected cluster (nodes, CPUs, GPUs)."""
    ray = load_ray()
    if not ray.is_initialized():
        return "not connected"
    resources = ray.cluster_resources()
    nodes = len([n for n in ray.nodes() if n.get("Alive")])
    cpus, gpus = resources.get("CPU", 0), resources.get("GPU", 0)
    return f"{nodes} node(s), {cpus:.0f} CPUs, {gpus:.0f} GPUs (driver on {socket.gethostname()})"
