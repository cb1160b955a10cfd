"""The bubblewrap backend: every command in fresh unshared namespaces over a shared workspace.

Shape (measured on the project's machines, see FIELD-NOTES): ``--unshare-all`` (no network)
plus a user namespace mapping uid 1000 (so read-only binds stay read-only even when the host
runs as root), read-only ``/usr``, a minimal ``/etc``, the runtime read-only at its own path,
the workspace read-write at ``/workspace``, an explicit environment, ``--die-with-parent``.
Memory and pids limits come from a per-command cgroup when the kernel allows one.

bwrap's options reach it through ``--args FD`` (a memfd it reads and closes before the sandbox
starts), not its command line: inside, ``/proc/1`` is bwrap itself, and its ``cmdline`` would
otherwise list every host path it mounts. Its environment is a fixed ``PATH`` and its working
directory ``/``, so ``/proc/1/environ`` holds nothing of the host either. What stays visible:
``/proc/self/mountinfo`` names each bind mount's source path on its host filesystem (the
runtime and base interpreter, mounted at their host paths by design so their scripts run; the
minimal ``/etc`` under the state directory; the workspace's host path unless a disk budget put
it on its own filesystem). The kernel writes those lines; bind mounts cannot hide them.
"""

from __future__ import annotations

import contextlib
import functools
import os
import shutil
import subprocess
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

from gym_trainfail.errors import SandboxLostError, SandboxUnavailableError
from gym_trainfail.hardware import Device
from gym_trainfail.paths import home
from gym_trainfail.sandbox.base import WORKSPACE, ExecResult, Limits, Sandbox, SandboxConfig
from gym_trainfail.sandbox.disk import scratch_bytes, shm_bytes
from gym_trainfail.sandbox.environment import sandbox_env
from gym_trainfail.sandbox.gpu import bwrap_gpu_args, bwrap_gpu_support, gpu_infos
from gym_trainfail.sandbox.process_runner import AuditChannel, run_limited

SANDBOX_UID = 1000
#: bwrap's own environment: nothing of the host's (the sandbox reads it as /proc/1/environ).
_BWRAP_ENV = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin"}

_ETC_FILES = {
    "passwd": "root:x:0:0:root:/root:/bin/sh\nagent:x:1000:1000:agent:/tmp:/bin/sh\n"
    "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n",
    "group": "root:x:0:\nagent:x:1000:\nnogroup:x:65534:\n",
    # torchrun's rendezvous and gloo resolve the hostname: it must map to loopback.
    "hosts": "127.0.0.1 localhost sandbox\n::1 localhost ip6-localhost\n",
    "nsswitch.conf": "passwd: files\ngroup: files\nhosts: files\n",
}

INSTALL_HINT = (
    "install bubblewrap (Debian/Ubuntu: `apt-get install bubblewrap`; Fedora: `dnf install bubblewrap`) "
    "on a kernel that allows user namespaces, or use sandbox='docker' with a running Docker engine"
)


def minimal_etc() -> Path:
    """A tiny ``/etc`` for sandboxes, written once under the state directory."""
    folder = home() / "sandbox-etc"
    if all((folder / name).exists() for name in _ETC_FILES):
        return folder
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in _ETC_FILES.items():
        (folder / name).write_text(text)
    ld_cache = Path("/etc/ld.so.cache")
    if ld_cache.exists():
        shutil.copyfile(ld_cache, folder / "ld.so.cache")
    return folder


@functools.cache
def probe() -> str | None:
    """``None`` if bubblewrap can make a sandbox here, else why not and what to do."""
    binary = shutil.which("bwrap")
    if binary is None:
        return f"bubblewrap (bwrap) is not installed; {INSTALL_HINT}"
    try:
        result = subprocess.run(
            [
                binary,
                "--unshare-all",
                "--unshare-user",
                "--uid",
                str(SANDBOX_UID),
                "--die-with-parent",
                "--ro-bind",
                "/usr",
                "/usr",
                "--symlink",
                "usr/bin",
                "/bin",
                "--symlink",
                "usr/lib",
                "/lib",
                "--symlink",
                "usr/lib64",
                "/lib64",
                "--proc",
                "/proc",
                "--dev",
                "/dev",
                "true",
            ],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"bubblewrap could not run ({exc}); {INSTALL_HINT}"
    if result.returncode != 0:
        return f"bubblewrap cannot create namespaces here ({result.stderr.strip()}); {INSTALL_HINT}"
    return None


class BwrapSandbox(Sandbox):
    """Commands run as uid 1000 in unshared namespaces, one bwrap process per command."""

    backend = "bwrap"

    def __init__(self, config: SandboxConfig) -> None:
        reason = probe()
        if reason is not None:
            raise SandboxUnavailableError(reason)
        super().__init__(config)
        self._binary = shutil.which("bwrap") or "bwrap"
        self._etc = minimal_etc()
        self.check_alive()

    def check_alive(self) -> None:
        self.require_workspace()
        for path in self.config.runtime.readonly_paths():
            if not path.exists():
                raise SandboxLostError(f"the runtime path {path} no longer exists")

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
        self.check_alive()
        audit = AuditChannel()
        environment = sandbox_env(self.config, WORKSPACE, devices, env, audit_fd=audit.write_fd, backend=self.backend)
        _, *options = self._bwrap_args(environment, cwd or WORKSPACE, devices)  # the list starts with "bwrap"
        with _argument_file(options) as args_fd:
            result = run_limited(
                [self._binary, "--args", str(args_fd), "--", *argv],
                env=_BWRAP_ENV,
                cwd=Path("/"),
                timeout_s=timeout_s,
                limits=self.config.limits,
                stdin=stdin,
                audit=audit,
                pass_fds=(args_fd,),
            )
        if not self.host_workspace.is_dir():
            raise SandboxLostError(f"the sandbox workspace {self.host_workspace} vanished during the command")
        return result

    def _bwrap_args(self, environment: Mapping[str, str], cwd: str, devices: Sequence[Device] = ()) -> list[str]:
        runtime = self.config.runtime
        args = [
            "bwrap", "--unshare-all", "--unshare-user", "--uid", str(SANDBOX_UID), "--gid", str(SANDBOX_UID),
            "--hostname", "sandbox", "--die-with-parent", "--new-session",
            "--ro-bind", "/usr", "/usr",
            "--symlink", "usr/lib", "/lib", "--symlink", "usr/lib64", "/lib64",
            "--symlink", "usr/bin", "/bin", "--symlink", "usr/sbin", "/sbin",
            "--ro-bind", str(self._etc), "/etc",
            "--proc", "/proc", "--dev", "/dev",
        ]  # fmt: skip
        args += _scratch_args(self.config.limits)
        gpus = gpu_infos(devices)
        if gpus:
            reason = bwrap_gpu_support()
            if reason is not None:
                raise SandboxUnavailableError(f"{reason}; use sandbox='docker' or 'process' for GPU jobs")
            try:
                args += bwrap_gpu_args(gpus)
            except FileNotFoundError as exc:
                raise SandboxUnavailableError(f"bwrap cannot expose the leased GPUs: {exc}") from None
        for path in runtime.readonly_paths():
            args += ["--ro-bind", str(path), str(path)]
        for path in runtime.hidden_paths():
            args += ["--tmpfs", str(path), "--remount-ro", str(path)]
        for mount in self.config.mounts:
            target = str(runtime.root / mount.target) if mount.in_runtime else mount.target
            args += ["--bind" if mount.writable else "--ro-bind", str(mount.source), target]
        args += ["--bind", str(self.host_workspace), WORKSPACE, "--chdir", cwd, "--clearenv"]
        for key, value in environment.items():
            args += ["--setenv", key, value]
        return args


def _scratch_args(limits: Limits) -> list[str]:
    """``/tmp`` and ``/dev/shm`` as tmpfs mounts of bounded size (they take memory: a full one
    answers ENOSPC instead of growing until the memory limit or the host runs out)."""
    args = []
    for target, size in (("/tmp", scratch_bytes(limits)), ("/dev/shm", shm_bytes(limits))):
        args += [*(("--size", str(size)) if size and sizes_tmpfs() else ()), "--tmpfs", target]
    return args


@functools.cache
def sizes_tmpfs() -> bool:
    """Whether this bubblewrap takes ``--size`` (0.7.0 and later); older ones get unbounded tmpfs."""
    try:
        shown = subprocess.run(["bwrap", "--help"], capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return "--size" in shown.stdout + shown.stderr


@contextlib.contextmanager
def _argument_file(arguments: Sequence[str]) -> Iterator[int]:
    """A memfd holding ``arguments`` NUL-separated, for ``bwrap --args FD`` (close-on-exec here;
    only the bwrap child that is passed it inherits it, and bwrap closes it once read)."""
    encoded = [os.fsencode(argument) for argument in arguments]
    if any(b"\0" in argument for argument in encoded):
        raise ValueError("embedded null byte")  # it would split one argument into several
    fd = os.memfd_create("bwrap-args", os.MFD_CLOEXEC)
    try:
        data = memoryview(b"".join(argument + b"\0" for argument in encoded))
        while data:
            data = data[os.write(fd, data) :]
        os.lseek(fd, 0, os.SEEK_SET)
        yield fd
    finally:
        os.close(fd)
