"""The ``process`` backend: plain subprocesses on the host. For development only.

It isolates nothing: no namespaces, no read-only runtime, the host filesystem and network are
reachable. It does start every command from an explicit environment (no host secrets), runs it
in the workspace, applies the same time, output and (where possible) cgroup limits, and kills
the whole process tree. Paths that other backends mount (``/workspace``, ``/grader``, ``/io``)
are rewritten to their host locations in the command's arguments.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from pathlib import Path

from gym_trainfail.hardware import Device
from gym_trainfail.sandbox.base import WORKSPACE, ExecResult, Sandbox, SandboxConfig
from gym_trainfail.sandbox.environment import sandbox_env
from gym_trainfail.sandbox.process_runner import AuditChannel, run_limited

log = logging.getLogger(__name__)

WARNING = "sandbox='process' isolates nothing (host filesystem and network are reachable); use it only for development"


class ProcessSandbox(Sandbox):
    """Commands run as host subprocesses in the workspace directory."""

    backend = "process"
    isolates = False

    def __init__(self, config: SandboxConfig) -> None:
        super().__init__(config)
        log.warning(WARNING)
        self.check_alive()

    @property
    def workspace_path(self) -> str:
        return str(self.host_workspace)

    def check_alive(self) -> None:
        self.require_workspace()

    def host_path(self, path: str) -> str:
        """Map a path as isolating backends see it to the host path it stands for."""
        targets = [(WORKSPACE, str(self.host_workspace))]
        targets += [(m.target, str(m.source)) for m in self.config.mounts]
        for target, source in sorted(targets, key=lambda t: -len(t[0])):
            if path == target or path.startswith(target + "/"):
                return source + path[len(target) :]
        return path

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
        environment = sandbox_env(
            self.config, str(self.host_workspace), devices, env, audit_fd=audit.write_fd, backend=self.backend
        )
        return run_limited(
            [self.host_path(a) for a in argv],
            env=environment,
            cwd=Path(self.host_path(cwd or WORKSPACE)),
            timeout_s=timeout_s,
            limits=self.config.limits,
            stdin=stdin,
            audit=audit,
        )
