"""The sandbox interface every backend implements (``bwrap``, ``process``, ``docker``).

A sandbox owns one workspace directory on the host, visible inside at
:attr:`Sandbox.workspace_path`, and runs commands against it. Commands are independent
processes: the workspace persists between them, processes do not. Backends normalise their
failures: :class:`~gym_trainfail.errors.SandboxLostError` when the sandbox died,
:class:`~gym_trainfail.errors.SandboxUnavailableError` when it cannot start.
"""

from __future__ import annotations

import abc
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any, ClassVar

from gym_trainfail.errors import SandboxLostError
from gym_trainfail.hardware import Device
from gym_trainfail.runtimes import Runtime

#: Where the workspace appears inside isolating sandboxes.
WORKSPACE = "/workspace"

GiB = 1 << 30


@dataclass(frozen=True)
class Mount:
    """A host path made visible inside the sandbox at ``target``."""

    source: Path
    target: str
    writable: bool = False
    #: ``target`` is relative to the runtime's root, wherever this sandbox shows the runtime
    #: (the host path under bubblewrap, the image's path under Docker).
    in_runtime: bool = False


@dataclass(frozen=True)
class Limits:
    """Resource limits per command. ``None`` means unlimited."""

    memory_bytes: int | None = 8 * GiB
    pids: int | None = 2048
    output_bytes: int = 48_000
    #: Size of the sandbox's ``/tmp`` (a tmpfs, emptied after every command); at most a quarter of
    #: ``memory_bytes`` is used (see :func:`gym_trainfail.sandbox.disk.scratch_bytes`).
    tmp_bytes: int | None = GiB


@dataclass(frozen=True)
class ExecResult:
    """A finished command as the sandbox saw it."""

    exit_code: int | None
    stdout: str
    stderr: str
    timed_out: bool = False
    oom_killed: bool = False
    output_truncated: bool = False
    duration_s: float = 0.0
    #: Valid records the arm's hooks inside the sandbox reported (blocked attempts, tool usage;
    #: the schema is :mod:`gym_trainfail.sandbox.audit`).
    audit: tuple[dict[str, Any], ...] = ()
    #: Lines on the audit channel that were not a valid record (dropped).
    audit_rejected: int = 0

    @property
    def ok(self) -> bool:
        """Exited with status 0 within its time."""
        return self.exit_code == 0 and not self.timed_out

    @property
    def killed_by(self) -> int | None:
        """The signal number that ended it, if a signal did."""
        if self.exit_code is not None and self.exit_code < 0:
            return -self.exit_code
        if self.exit_code is not None and self.exit_code > 128:
            return self.exit_code - 128
        return None


@dataclass(frozen=True)
class SandboxConfig:
    """Everything a backend needs to make a sandbox."""

    runtime: Runtime
    workspace: Path
    mounts: tuple[Mount, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    limits: Limits = Limits()
    label: str = "episode"
    #: Folders, relative to the runtime's root, put on ``PYTHONPATH`` (the control arm's decoy).
    python_path: tuple[str, ...] = ()


class Sandbox(abc.ABC):
    """One isolated place to run commands against a workspace."""

    #: Backend name, as given to ``sandbox=``.
    backend: ClassVar[str]
    #: Whether the backend isolates anything (``process`` does not).
    isolates: ClassVar[bool] = True

    def __init__(self, config: SandboxConfig) -> None:
        self.config = config

    @property
    def host_workspace(self) -> Path:
        """The workspace on the host (bind-mounted; file tools and snapshots use it)."""
        return self.config.workspace

    @property
    def workspace_path(self) -> str:
        """The workspace as commands inside the sandbox see it."""
        return WORKSPACE

    @abc.abstractmethod
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
        """Run ``argv`` inside the sandbox and wait for it (or its timeout).

        Raises :class:`~gym_trainfail.errors.SandboxLostError` if the sandbox has died.
        """

    @abc.abstractmethod
    def check_alive(self) -> None:
        """Raise :class:`~gym_trainfail.errors.SandboxLostError` if the sandbox has died."""

    def require_workspace(self) -> None:
        """Raise :class:`~gym_trainfail.errors.SandboxLostError` if the host workspace is gone."""
        if not self.host_workspace.is_dir():
            raise SandboxLostError(f"the sandbox workspace {self.host_workspace} no longer exists")

    def close(self) -> None:  # noqa: B027 - optional hook: most backends hold nothing between commands
        """Release what the sandbox holds (the host workspace is left in place)."""

    def __enter__(self) -> Sandbox:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
