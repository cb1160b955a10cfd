"""Sandboxes: one interface, several backends, chosen by name or ``auto``.

Backends are registered in :data:`BACKENDS` with a probe that says why they cannot run here
(``None`` when they can). Third-party backends register through the entry-point group
``gym_trainfail.sandboxes`` (a :class:`Sandbox` subclass with a ``probe`` static method).
``auto`` prefers an isolating backend in the order of :data:`AUTO_ORDER`, and refuses with
how to install one when none is usable; it never falls back to ``process``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from importlib.metadata import entry_points

from gym_trainfail.errors import SandboxUnavailableError
from gym_trainfail.hardware import Device
from gym_trainfail.sandbox import bwrap
from gym_trainfail.sandbox.base import (
    WORKSPACE,
    ExecResult,
    Limits,
    Mount,
    Sandbox,
    SandboxConfig,
)
from gym_trainfail.sandbox.bwrap import BwrapSandbox
from gym_trainfail.sandbox.process import ProcessSandbox

__all__ = [
    "AUTO_ORDER",
    "BACKENDS",
    "WORKSPACE",
    "Backend",
    "Device",
    "ExecResult",
    "Limits",
    "Mount",
    "Sandbox",
    "SandboxConfig",
    "backend_status",
    "create_sandbox",
    "resolve_backend",
]


@dataclass(frozen=True)
class Backend:
    """A sandbox backend: its class and a probe (``None`` = usable, else the reason)."""

    name: str
    factory: type[Sandbox]
    probe: Callable[[], str | None]


def _docker_backend() -> Backend:
    """The Docker backend; without the optional Docker SDK, a stand-in whose probe says what to install."""
    try:  # imported here, not at the top: the `docker` extra is optional
        from gym_trainfail.sandbox import docker
    except ImportError as missing:
        reason = (
            f"the Docker SDK is not installed ({missing.name or missing}); "
            "install it with `pip install 'gym-trainfail[docker]'`, or use sandbox='bwrap'"
        )
        return Backend("docker", BwrapSandbox, lambda: reason)  # the probe refuses before the factory runs
    return Backend("docker", docker.DockerSandbox, docker.probe)


BACKENDS: dict[str, Backend] = {
    "docker": _docker_backend(),
    "bwrap": Backend("bwrap", BwrapSandbox, bwrap.probe),
    "process": Backend("process", ProcessSandbox, lambda: None),
}

#: ``auto`` tries these in order: Docker when an engine with runtime images answers, else bubblewrap.
AUTO_ORDER = ("docker", "bwrap")


def _plugin_backends() -> None:
    for ep in entry_points(group="gym_trainfail.sandboxes"):
        if ep.name in BACKENDS:
            continue
        cls = ep.load()
        BACKENDS[ep.name] = Backend(ep.name, cls, cls.probe)


def backend_status() -> dict[str, str | None]:
    """Every known backend with ``None`` (usable) or the reason it is not."""
    _plugin_backends()
    return {name: backend.probe() for name, backend in BACKENDS.items()}


def resolve_backend(name: str) -> str:
    """The concrete backend ``name`` stands for; raises with what to do when none is usable."""
    _plugin_backends()
    if name != "auto":
        if name not in BACKENDS:
            raise SandboxUnavailableError(f"unknown sandbox {name!r}; expected 'auto' or one of {sorted(BACKENDS)}")
        reason = BACKENDS[name].probe()
        if reason is not None:
            raise SandboxUnavailableError(f"sandbox {name!r} is not usable here: {reason}")
        return name
    reasons = []
    for candidate in AUTO_ORDER:
        backend = BACKENDS.get(candidate)
        if backend is None:
            reasons.append(f"{candidate}: backend not installed")
            continue
        reason = backend.probe()
        if reason is None:
            return candidate
        reasons.append(f"{candidate}: {reason}")
    raise SandboxUnavailableError(
        "no isolating sandbox is usable here (" + "; ".join(reasons) + "). "
        f"{bwrap.INSTALL_HINT}. For development only, sandbox='process' runs without isolation."
    )


def create_sandbox(name: str, config: SandboxConfig) -> Sandbox:
    """Make a sandbox with backend ``name`` (or ``auto``)."""
    return BACKENDS[resolve_backend(name)].factory(config)
