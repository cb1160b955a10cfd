"""The bubblewrap backend: every command in fresh unshared namespaces over a shared workspace.

Shape (measured on the project's machines, see FIELD-NOTES): ``--unshare-all`` (no network)
plus a user namespace mapping uid 1000 (so read-only binds stay read-only even when the host
runs as root), read-only ``/usr``, a minimal ``/etc``, the runtime read-only at its own path,
the workspace read-write at ``/workspace``, an explicit environment, ``--die-with-parent``.
Memory and pids limits come from a per-command cgroup when the kernel allows one.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path

from gym_trainfail.errors import SandboxLostError, SandboxUnavailableError
from gym_trainfail.paths import home
from gym_trainfail.sandbox.base import WORKSPACE, Device, ExecResult, Sandbox, SandboxConfig
from gym_trainfail.sandbox.environment import sandbox_env
from gym_trainfail.sandbox.process_runner import AuditChannel, run_limited

SANDBOX_UID = 1000

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
        environment = sandbox_env(self.config, WORKSPACE, devices, env, audit_fd=audit.write_fd)
        command = [*self._bwrap_args(environment, cwd or WORKSPACE), "--", *argv]
        result = run_limited(
            command,
            env={"PATH": os.environ.get("PATH", "/usr/bin:/bin")},
            cwd=None,
            timeout_s=timeout_s,
            limits=self.config.limits,
            stdin=stdin,
            audit=audit,
        )
        if not self.host_workspace.is_dir():
            raise SandboxLostError(f"the sandbox workspace {self.host_workspace} vanished during the command")
        return result

    def _bwrap_args(self, environment: Mapping[str, str], cwd: str) -> list[str]:
        runtime = self.config.runtime
        args = [
            "bwrap", "--unshare-all", "--unshare-user", "--uid", str(SANDBOX_UID), "--gid", str(SANDBOX_UID),
            "--hostname", "sandbox", "--die-with-parent", "--new-session",
            "--ro-bind", "/usr", "/usr",
            "--symlink", "usr/lib", "/lib", "--symlink", "usr/lib64", "/lib64",
            "--symlink", "usr/bin", "/bin", "--symlink", "usr/sbin", "/sbin",
            "--ro-bind", str(self._etc), "/etc",
            "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp",
        ]  # fmt: skip
        for path in runtime.readonly_paths():
            args += ["--ro-bind", str(path), str(path)]
        for path in runtime.hidden_paths():
            args += ["--tmpfs", str(path), "--remount-ro", str(path)]
        for mount in self.config.mounts:
            args += ["--bind" if mount.writable else "--ro-bind", str(mount.source), mount.target]
        args += ["--bind", str(self.host_workspace), WORKSPACE, "--chdir", cwd, "--clearenv"]
        for key, value in environment.items():
            args += ["--setenv", key, value]
        return args
