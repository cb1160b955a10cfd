"""The Docker backend: one container per episode (a fresh one per grading scenario), one ``docker exec`` per command.

Container shape, built from the arm's runtime image (``trainfail images build``):

* network ``none``; hostname ``sandbox`` mapped to loopback (torchrun's rendezvous resolves it);
* the sandbox user (uid 1000; the caller's uid when the caller is not root), all capabilities
  dropped, ``no-new-privileges``;
* a read-only root filesystem holding the runtime; the workspace bind-mounted read-write at
  ``/workspace``; ``/tmp`` a tmpfs; other mounts as the config says;
* memory (no swap), pids and shared-memory limits; every command has a time limit.

**Memory**: ``/tmp`` (``Limits.tmp_bytes``, at most a quarter of the memory limit) and
``/dev/shm`` (at most half) are tmpfs mounts, charged to the container's memory, so filling
both still leaves room: a full ``/tmp`` answers ``ENOSPC``. When the container does run out of
memory, the kernel kills the process with the highest ``oom_score_adj``: every command raises
its own to 1000 before it starts, while PID 1 keeps the container's 0. (PID 1 cannot go lower:
that needs ``CAP_SYS_RESOURCE``, which the sandbox lacks, and a lower container-wide value would
be inherited by every ``docker exec``.) A command that lowers itself back to 0 on purpose ties
with PID 1, and the kernel then picks the larger resident set; if PID 1 dies, the sandbox is lost
and the episode restarts it from its last checkpoint.

**PID 1** is ``containers/sandbox_init.py``. After every command, and at its timeout, the host
has the engine signal PID 1, which kills every other process in the container and answers on
its own stdout; the host waits for that answer. So no process outlives its command (as with
bwrap), a fork bomb is cleaned up without starting anything in the container, and a command
that ignores its timeout is killed with its whole tree.

**Audit channel**: a FIFO the host creates and bind-mounts (read-only mount, mode 0622: the
sandbox may write, not read) at ``/run/trainfail/audit``; each command starts with it open as
fd 3 (``TRAINFAIL_AUDIT_FD=3``). The host holds the read end and drains it while the command
runs and once more after every process of the command is dead, so each record is on the host
before anything in the sandbox could take it back; nothing is stored inside the sandbox.

**GPUs**: a command given GPU devices (``run_job`` with the device pool's GPUs) runs in its own
short-lived container made with device requests for exactly those GPU ids, over the same
workspace, mounts and channels; the episode container never sees a GPU. Its lifetime (creation
to removal) lies inside the device lease, so device-seconds = devices × that worker's lifetime.
CPU ranks run in the episode container.

**Cleanup** escalates (stop → kill → forced removal). Containers are labelled with their owner
process; the process removes its own at exit and on ``SIGTERM``, a new process reaps those of
dead owners, and a container whose owner died removes itself (PID 1 watches a lifeline FIFO
the owner holds open; containers are created with auto-remove).
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import selectors
import signal
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import docker.errors
from docker.models.containers import Container
from docker.types import DeviceRequest
from docker.types import Mount as DockerMount

from gym_trainfail.errors import SandboxLostError, SandboxUnavailableError
from gym_trainfail.hardware import Device
from gym_trainfail.paths import home
from gym_trainfail.sandbox.base import WORKSPACE, ExecResult, Limits, Mount, Sandbox, SandboxConfig
from gym_trainfail.sandbox.disk import scratch_bytes, shm_bytes
from gym_trainfail.sandbox.docker_engine import (
    CTL_LABEL,
    LABEL,
    OWNER_FILE,
    OWNER_LABEL,
    SANDBOX_LABEL,
    STDOUT,
    Engine,
    RawStream,
    connect,
    container_path,
    docker_host,
    engine_errors,
    iter_lines,
    open_stream,
    owner_label,
    reap_stale,
    remove_ctl_dir,
    track,
    untrack,
)
from gym_trainfail.sandbox.docker_image import RuntimeImage, find_runtime_image, runtime_images
from gym_trainfail.sandbox.environment import sandbox_env
from gym_trainfail.sandbox.process_runner import CappedBuffer, parse_audit

SANDBOX_UID = 1000
AUDIT_FD = 3
#: Where the host's channel folder (audit and lifeline FIFOs) appears in the container.
CTL_TARGET = "/run/trainfail"
AUDIT_PATH = f"{CTL_TARGET}/audit"
INIT_COMMAND = ("python3", "-I", "-S", "/opt/trainfail/sandbox-init.py")
#: Makes the command the OOM killer's first choice (see "Memory" above), opens the audit FIFO
#: (``$0``) as fd 3, then becomes the command. A constant: values are arguments.
LAUNCH_SCRIPT = '{ echo 1000 >/proc/self/oom_score_adj; } 2>/dev/null; exec 3>>"$0" && exec "$@"'
_READY_TIMEOUT_S = 60.0
_REAP_TIMEOUT_S = 20.0
_EXIT_POLL_S = 0.5
#: After the command's main process exits, how long to keep reading output held open by stragglers.
_DRAIN_S = 1.0
_AUDIT_LIMIT = 256_000
_KILLED = 128 + 9


def probe() -> str | None:
    """``None`` if an engine answers and holds a runtime image, else why not and what to do."""
    try:
        engine = connect()
        images = runtime_images(engine)
    except SandboxUnavailableError as exc:
        return str(exc)
    except engine_errors() as exc:
        return f"the Docker engine at DOCKER_HOST={docker_host()!r} failed to list images ({exc})"
    if not images:
        return (
            f"the Docker engine at DOCKER_HOST={docker_host()!r} answers but holds no gym-trainfail runtime image; "
            "build one with `trainfail images build --arm control` (or use sandbox='bwrap')"
        )
    return None


def ctl_root() -> Path:
    """Where the host keeps each container's channel folder."""
    return home() / "docker" / "ctl"


def sandbox_uid() -> int:
    """The uid commands run as: 1000 when the host runs as root, else the caller's own uid
    (so the caller can still read and change what the sandbox writes into the workspace)."""
    return SANDBOX_UID if os.geteuid() == 0 else os.geteuid()


# -- container specification (pure: unit-tested without an engine) -----------------------------


@dataclass(frozen=True)
class ContainerSpec:
    """Everything that decides how one sandbox container is made."""

    image: str
    name: str
    uid: int
    workspace: Path
    ctl_dir: Path
    limits: Limits
    mounts: tuple[Mount, ...] = ()
    labels: Mapping[str, str] = field(default_factory=dict)
    gpus: tuple[int, ...] = ()


def device_requests(gpus: Sequence[int]) -> list[DeviceRequest]:
    """The engine's device request for exactly these host GPU ids (as ``docker run --gpus device=…``)."""
    if not gpus:
        return []
    return [DeviceRequest(driver="nvidia", device_ids=[str(i) for i in gpus], capabilities=[["gpu"]])]


def docker_mounts(spec: ContainerSpec) -> list[DockerMount]:
    """Workspace (read-write), channel folder (read-only) and the config's mounts."""
    mounts = [
        DockerMount(WORKSPACE, str(spec.workspace), type="bind", read_only=False),
        DockerMount(CTL_TARGET, str(spec.ctl_dir), type="bind", read_only=True),
    ]
    mounts += [DockerMount(m.target, str(m.source), type="bind", read_only=not m.writable) for m in spec.mounts]
    return mounts


def container_kwargs(spec: ContainerSpec) -> dict[str, Any]:
    """Keyword arguments of ``containers.create`` for ``spec``."""
    limits = spec.limits
    memory = limits.memory_bytes
    tmp_bytes = scratch_bytes(limits)
    tmp_size = f",size={tmp_bytes}" if tmp_bytes else ""
    kwargs: dict[str, Any] = {
        "image": spec.image,
        "command": list(INIT_COMMAND),
        "name": spec.name,
        "labels": dict(spec.labels),
        "user": f"{spec.uid}:{spec.uid}",
        "network_mode": "none",
        "hostname": "sandbox",
        "extra_hosts": {"sandbox": "127.0.0.1"},
        "read_only": True,
        "tmpfs": {"/tmp": f"rw,exec,nosuid,nodev,mode=1777{tmp_size}"},
        "mounts": docker_mounts(spec),
        "working_dir": WORKSPACE,
        "cap_drop": ["ALL"],
        # Only so that the engine's default seccomp profile lets process_vm_readv through, as the kernel
        # would outside (py-spy, gdb -p on a sibling of the same user): the sandbox user is not root and
        # no-new-privileges keeps it from ever holding the capability, so ptrace stays the kernel's
        # same-user rule, as in bubblewrap (tests/test_hangs.py).
        "cap_add": ["SYS_PTRACE"],
        "security_opt": ["no-new-privileges"],
        "ipc_mode": "private",
        "shm_size": shm_bytes(limits),
        "auto_remove": True,
        "detach": True,
        # An image based on a CUDA image may ask the NVIDIA runtime for every GPU; only jobs get GPUs.
        "environment": {} if spec.gpus else {"NVIDIA_VISIBLE_DEVICES": "void"},
        "device_requests": device_requests(spec.gpus),
    }
    if memory:
        kwargs["mem_limit"] = memory
        kwargs["memswap_limit"] = memory
    if limits.pids:
        kwargs["pids_limit"] = limits.pids
    return kwargs


def exec_command(argv: Sequence[str]) -> list[str]:
    """The argument list ``docker exec`` runs: the launcher (audit fd 3), then ``argv``."""
    return ["/bin/sh", "-c", LAUNCH_SCRIPT, AUDIT_PATH, *argv]


# -- host side of the channels -----------------------------------------------------------------


class Channels:
    """The host's ends of a container's FIFOs: the audit channel (read) and the lifeline (held open)."""

    def __init__(self, folder: Path) -> None:
        folder.mkdir(parents=True, mode=0o755)
        audit, lifeline = folder / "audit", folder / "lifeline"
        os.mkfifo(audit)
        os.chmod(audit, 0o622)  # the sandbox user may write records, never read them back
        os.mkfifo(lifeline)
        os.chmod(lifeline, 0o644)
        (folder / OWNER_FILE).write_text(owner_label())  # lets a later process remove a dead owner's folder
        self.folder = folder
        # Read-write opens never block and keep a writer, so reads give EAGAIN (not EOF) when idle.
        self.audit_fd = os.open(audit, os.O_RDWR | os.O_NONBLOCK)
        self.lifeline_fd = os.open(lifeline, os.O_RDWR)

    def drain(self, buffer: CappedBuffer) -> None:
        """Move every record written so far into ``buffer``."""
        while self.audit_fd >= 0:
            try:
                chunk = os.read(self.audit_fd, 65536)
            except (BlockingIOError, OSError):
                return
            if not chunk:
                return
            buffer.write(chunk)

    def close(self) -> None:
        """Close the host's ends (once: a closed descriptor number may be reused) and remove the FIFOs."""
        for fd in (self.audit_fd, self.lifeline_fd):
            if fd >= 0:
                with contextlib.suppress(OSError):
                    os.close(fd)
        self.audit_fd = self.lifeline_fd = -1
        remove_ctl_dir(self.folder)


# -- one running container ---------------------------------------------------------------------


@dataclass
class _Output:
    stdout: CappedBuffer
    stderr: CappedBuffer
    audit: CappedBuffer


class SandboxContainer:
    """One running sandbox container: start, run commands, kill leftovers, remove."""

    def __init__(self, engine: Engine, spec: ContainerSpec) -> None:
        self.engine = engine
        self.spec = spec
        self.channels = Channels(spec.ctl_dir)
        self._lines = bytearray()
        self._attach: RawStream | None = None
        self._init_fd: int | None = None
        self.container: Container | None = None
        try:
            self.container = engine.client.containers.create(**container_kwargs(spec))
            track(spec.name, self.close)
            self._attach = open_stream(
                engine, container_path(spec.name, "attach"), query={"stream": "1", "stdout": "1", "stderr": "1"}
            )
            self.container.start()
            self._await_line("ready", _READY_TIMEOUT_S)
            self._init_fd = self._local_init()
        except BaseException as exc:
            self.close()
            if isinstance(exc, engine_errors()):
                raise SandboxUnavailableError(f"the Docker engine could not start a sandbox container: {exc}") from None
            raise

    @property
    def id(self) -> str:
        assert self.container is not None
        return str(self.container.id)

    def check_running(self) -> None:
        """Raise :class:`SandboxLostError` unless the container is still running."""
        try:
            state = self.engine.client.api.inspect_container(self.id)["State"]
        except docker.errors.NotFound:
            raise SandboxLostError(f"the sandbox container {self.spec.name} is gone") from None
        if not state.get("Running"):
            raise SandboxLostError(f"the sandbox container {self.spec.name} stopped ({state.get('Status')})")

    def exec(
        self, argv: Sequence[str], env: Mapping[str, str], cwd: str, timeout_s: float, stdin: bytes | None
    ) -> ExecResult:
        """Run one command to completion or timeout; nothing it started survives it."""
        started, wall_started = time.monotonic(), time.time()
        exec_id = self._create_exec(argv, env, cwd, stdin is not None)
        stream = open_stream(self.engine, f"/exec/{exec_id}/start", body={"Detach": False, "Tty": False})
        if stdin is not None:
            stream.send_stdin(stdin)
        limit = self.spec.limits.output_bytes
        output = _Output(CappedBuffer(limit), CappedBuffer(limit), CappedBuffer(_AUDIT_LIMIT))
        try:
            timed_out = self._pump(stream, exec_id, output, started + timeout_s)
        finally:
            stream.close()
        self.reap()
        self.channels.drain(output.audit)
        exit_code = None if timed_out else self._exit_code(exec_id)
        oom = exit_code == _KILLED and self._oom_since(wall_started)
        reports = parse_audit(output.audit)
        return ExecResult(
            exit_code=exit_code,
            stdout=output.stdout.text(),
            stderr=output.stderr.text(),
            timed_out=timed_out,
            oom_killed=oom,
            output_truncated=output.stdout.truncated or output.stderr.truncated,
            duration_s=time.monotonic() - started,
            audit=reports.records,
            audit_rejected=reports.rejected,
        )

    def _create_exec(self, argv: Sequence[str], env: Mapping[str, str], cwd: str, stdin: bool) -> str:
        try:
            created = self.engine.client.api.exec_create(
                self.id,
                exec_command(argv),
                stdout=True,
                stderr=True,
                stdin=stdin,
                tty=False,
                environment=dict(env),
                workdir=cwd,
                user=f"{self.spec.uid}:{self.spec.uid}",
            )
        except docker.errors.NotFound:
            raise SandboxLostError(f"the sandbox container {self.spec.name} is gone") from None
        except docker.errors.APIError as exc:
            if exc.status_code == 409:
                raise SandboxLostError(f"the sandbox container {self.spec.name} is not running") from None
            raise
        return str(created["Id"])

    def _pump(self, stream: RawStream, exec_id: str, output: _Output, deadline: float) -> bool:
        """Copy output until the stream ends; True if the deadline passed first."""
        selector = selectors.DefaultSelector()
        selector.register(stream.sock, selectors.EVENT_READ, "stream")
        selector.register(self.channels.audit_fd, selectors.EVENT_READ, "audit")
        next_check, exited_at = time.monotonic() + _EXIT_POLL_S, None
        try:
            while not stream.closed:
                now = time.monotonic()
                if now >= deadline:
                    return True
                if exited_at is None and now >= next_check:
                    exited_at = None if self._exec_running(exec_id) else now
                    next_check = now + _EXIT_POLL_S
                if exited_at is not None and now - exited_at > _DRAIN_S:
                    break  # a straggler holds the output open; it dies with the reap
                for key, _ in selector.select(timeout=min(deadline - now, 0.1)):
                    if key.data == "audit":
                        self.channels.drain(output.audit)
                        continue
                    for number, payload in stream.read_frames() or ():
                        (output.stdout if number == STDOUT else output.stderr).write(payload)
        finally:
            selector.close()
        return False

    def _exec_running(self, exec_id: str) -> bool:
        try:
            return bool(self.engine.client.api.exec_inspect(exec_id).get("Running"))
        except engine_errors():
            return False

    def _exit_code(self, exec_id: str) -> int | None:
        try:
            code = self.engine.client.api.exec_inspect(exec_id).get("ExitCode")
        except docker.errors.NotFound:
            raise SandboxLostError(f"the sandbox container {self.spec.name} is gone") from None
        return int(code) if code is not None else None

    def _oom_since(self, since: float) -> bool:
        """Whether the kernel OOM-killed a process of this container since ``since`` (engine events)."""
        try:
            # Whole seconds (the SDK's type); an until in the future makes the engine wait for it (< 1 s).
            events = self.engine.client.api.events(
                since=int(since),
                until=int(time.time()) + 1,
                filters={"container": self.id, "event": "oom"},
                decode=True,
            )
            return any(True for _ in events)
        except engine_errors():
            return False

    def _local_init(self) -> int | None:
        """A pidfd of the container's PID 1 when the engine runs on this machine, else None.

        Signalling through it skips the engine's round trip through the runtime (``runc kill``,
        tens of milliseconds per command). The pidfd pins the process, and its mount table must
        name this container's channel folder, so no other process can be signalled by mistake.
        """
        try:
            pid = int(self.engine.client.api.inspect_container(self.id)["State"]["Pid"])
            fd = os.pidfd_open(pid)
        except (OSError, KeyError, TypeError, ValueError):
            return None
        except engine_errors():
            return None
        try:
            if str(self.spec.ctl_dir.name) in Path(f"/proc/{pid}/mountinfo").read_text():
                return fd
        except OSError:
            pass
        os.close(fd)
        return None

    def _signal_init(self) -> None:
        if self._init_fd is not None:
            try:
                signal.pidfd_send_signal(self._init_fd, signal.SIGUSR1)
                return
            except ProcessLookupError:
                raise SandboxLostError(f"the sandbox container {self.spec.name} stopped") from None
            except OSError:
                pass  # not allowed after all: ask the engine
        self.engine.client.api.kill(self.id, "SIGUSR1")

    def reap(self) -> None:
        """Have PID 1 kill every other process, and wait for it to say it did."""
        try:
            self._signal_init()
        except docker.errors.NotFound:
            raise SandboxLostError(f"the sandbox container {self.spec.name} is gone") from None
        except docker.errors.APIError as exc:
            raise SandboxLostError(f"the sandbox container {self.spec.name} stopped ({exc.explanation})") from None
        self._await_line("reaped", _REAP_TIMEOUT_S)

    def _await_line(self, prefix: str, timeout_s: float) -> str:
        attach = self._attach
        assert attach is not None
        deadline = time.monotonic() + timeout_s
        selector = selectors.DefaultSelector()
        selector.register(attach.sock, selectors.EVENT_READ)
        try:
            while time.monotonic() < deadline:
                if not selector.select(timeout=max(0.0, deadline - time.monotonic())):
                    continue
                frames = attach.read_frames()
                if frames is None:
                    raise SandboxLostError(f"the sandbox container {self.spec.name} stopped")
                for _, payload in frames:
                    for line in iter_lines(payload, self._lines):
                        if line.startswith(prefix):
                            return line
        finally:
            selector.close()
        self.close()
        raise SandboxLostError(f"the sandbox container {self.spec.name} did not answer within {timeout_s:.0f} s")

    def close(self) -> None:
        """Stop and remove the container (stop → kill → forced removal); idempotent."""
        untrack(self.spec.name)
        if self._init_fd is not None:
            with contextlib.suppress(OSError):
                os.close(self._init_fd)
            self._init_fd = None
        if self.container is not None:
            remove_container(self.engine, self.spec.name)
        if self._attach is not None:
            self._attach.close()
        self.channels.close()


def remove_container(engine: Engine, name: str, timeout_s: float = 20.0) -> None:
    """Stop, kill and force-remove a container until the engine no longer knows it."""
    api = engine.client.api
    for step in ("stop", "kill", "remove"):
        try:
            if step == "stop":
                api.stop(name, timeout=2)  # PID 1 exits on SIGTERM at once
            elif step == "kill":
                api.kill(name)
            else:
                api.remove_container(name, force=True)
        except docker.errors.NotFound:
            return
        except engine_errors():
            pass  # not running any more, or already being removed: escalate anyway
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            api.inspect_container(name)
        except docker.errors.NotFound:
            return
        except engine_errors():
            return
        time.sleep(0.05)
        with contextlib.suppress(*engine_errors()):
            api.remove_container(name, force=True)


# -- the backend -------------------------------------------------------------------------------


def adopt_tree(root: Path, uid: int) -> None:
    """Give the sandbox user ownership of ``root`` and everything under it (host root only):
    files the host wrote (the case workspace, file tools) must stay writable inside."""
    if os.geteuid() != 0 or uid == 0 or not root.is_dir():
        return
    pending = [root]
    if root.lstat().st_uid != uid:
        os.lchown(root, uid, uid)
    while pending:
        with os.scandir(pending.pop()) as entries:
            for entry in entries:
                if entry.stat(follow_symlinks=False).st_uid != uid:
                    os.lchown(entry.path, uid, uid)
                if entry.is_dir(follow_symlinks=False):
                    pending.append(Path(entry.path))


def _slug(text: str) -> str:
    return re.sub(r"[^a-zA-Z0-9_.-]+", "-", text).strip("-")[:40] or "sandbox"


class DockerSandbox(Sandbox):
    """Commands run with ``docker exec`` in one container per sandbox (see the module docstring)."""

    backend = "docker"

    def __init__(self, config: SandboxConfig) -> None:
        super().__init__(config)
        self.engine = connect()
        self.image: RuntimeImage = find_runtime_image(self.engine, config.runtime)
        self.uid = sandbox_uid()
        self._view = replace(config, runtime=self.image.container_runtime())
        self._lock = threading.Lock()
        reap_stale(self.engine, ctl_root())
        self.require_workspace()
        self._adopt()
        self._box = SandboxContainer(self.engine, self.spec())

    @property
    def container_runtime(self) -> str:
        """The runtime's root inside the container (its image's copy of the host runtime)."""
        return str(self._view.runtime.root)

    def spec(self, gpus: tuple[int, ...] = ()) -> ContainerSpec:
        """The specification of this sandbox's container (or of a GPU job's container)."""
        role = self.config.label if not gpus else f"{self.config.label}-job"
        name = f"trainfail-{_slug(role)}-{secrets.token_hex(4)}"
        ctl = ctl_root() / name
        labels = {SANDBOX_LABEL: "1", OWNER_LABEL: owner_label(), CTL_LABEL: str(ctl), f"{LABEL}.role": role}
        return ContainerSpec(
            image=self.image.id,
            name=name,
            uid=self.uid,
            workspace=self.host_workspace.resolve(),
            ctl_dir=ctl,
            limits=self.config.limits,
            mounts=tuple(self._container_mount(m) for m in self.config.mounts),
            labels=labels,
            gpus=gpus,
        )

    def _container_mount(self, mount: Mount) -> Mount:
        # A runtime path (the arm's watched files) is where the image holds the runtime.
        target = str(Path(self.container_runtime) / mount.target) if mount.in_runtime else mount.target
        return replace(mount, source=mount.source.resolve(), target=target, in_runtime=False)

    def check_alive(self) -> None:
        self.require_workspace()
        try:
            self._box.check_running()
        except engine_errors() as exc:
            raise SandboxLostError(f"the Docker engine does not answer about the sandbox: {exc}") from None

    def exec(
        self,
        argv: Sequence[str],
        *,
        timeout_s: float,
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
        devices: Sequence[Device] = (),
        stdin: bytes | None = None,
    ) -> ExecResult:
        with self._lock:  # commands of one sandbox run one at a time: each ends by killing leftovers
            self.require_workspace()
            self._adopt()
            environment = sandbox_env(self._view, WORKSPACE, devices, env, audit_fd=AUDIT_FD, backend=self.backend)
            gpus = tuple(d.index for d in devices if d.kind == "gpu")
            try:
                return self._run(argv, environment, cwd or WORKSPACE, timeout_s, stdin, gpus)
            except engine_errors() as exc:
                raise SandboxLostError(f"the Docker engine failed while running the command: {exc}") from None

    def _run(
        self,
        argv: Sequence[str],
        environment: Mapping[str, str],
        cwd: str,
        timeout_s: float,
        stdin: bytes | None,
        gpus: tuple[int, ...],
    ) -> ExecResult:
        if not gpus:
            return self._box.exec(argv, environment, cwd, timeout_s, stdin)
        job = SandboxContainer(self.engine, self.spec(gpus))
        try:
            return job.exec(argv, environment, cwd, timeout_s, stdin)
        finally:
            job.close()

    def _adopt(self) -> None:
        adopt_tree(self.host_workspace, self.uid)
        for mount in self.config.mounts:
            if mount.writable:
                adopt_tree(mount.source, self.uid)

    def close(self) -> None:
        self._box.close()
