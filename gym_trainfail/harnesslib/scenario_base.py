"""A case's scenario type: the frozen request, parsed once, read by both phases.

A case subclasses :class:`ScenarioBase` with its own fields (topology, training settings,
inputs, tolerances), every one with a default: the defaults are the base scenario, and a
scenario's ``[scenario.params]`` table (``grader/scenarios.toml``) overrides them by name. An
unknown param is refused, so a misspelt key never silently leaves a default in place. Nothing
here is private: the run phase reads the same requests. Standard library only.

    @dataclass(frozen=True)
    class Scenario(ScenarioBase):
        processes: int = 2
        lr: float = 0.05

        def validate(self) -> None:
            if self.processes != self.devices:
                raise ValueError(...)
"""

from __future__ import annotations

import json
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, Self

if __package__:  # imported as part of the package
    from .protocol import NAME_RE
else:  # imported from /harnesslib by a case's kit or judge
    from protocol import NAME_RE  # type: ignore[no-redef,import-not-found,unused-ignore]

#: Request keys that are not params.
REQUEST_FIELDS = ("name", "kind", "devices", "backend")


@dataclass(frozen=True)
class ScenarioBase:
    """The request fields every scenario has; subclasses add the case's params (with defaults)."""

    name: str
    kind: str
    devices: int
    #: ``gloo`` on CPU ranks, ``nccl`` when the grader was given GPUs.
    backend: str = "gloo"
    #: The most one launch of the pipeline may run before it is stopped.
    run_timeout_s: float = 540.0

    def __post_init__(self) -> None:
        if not NAME_RE.match(self.name):
            raise ValueError(f"scenario name {self.name!r} is not a plain file name")
        if self.devices < 1:
            raise ValueError(f"scenario {self.name!r} holds {self.devices} devices")
        self.validate()

    def validate(self) -> None:
        """Refuse a scenario that cannot ask its question (raise ``ValueError``); override."""

    @classmethod
    def from_request(cls, raw: dict[str, Any]) -> Self:
        """Build from ``{"name", "kind", "devices", "backend", "params": {...}}``."""
        params = raw.get("params", {})
        if not isinstance(params, dict):
            raise ValueError("scenario params must be a table")
        known = {f.name for f in fields(cls)} - set(REQUEST_FIELDS)
        unknown = sorted(set(params) - known)
        if unknown:
            raise ValueError(f"unknown scenario params {unknown}; {cls.__name__} has: {', '.join(sorted(known))}")
        return cls(
            name=str(raw["name"]),
            kind=str(raw["kind"]),
            devices=int(raw["devices"]),
            backend=str(raw.get("backend", "gloo")),
            **params,
        )

    @classmethod
    def from_json(cls, path: str | Path) -> Self:
        """Build from a file holding one request (``/io/scenario.json`` of an oracle run)."""
        return cls.from_request(json.loads(Path(path).read_text(encoding="utf-8")))


def size_limit(values: int, *, bytes_per_value: int = 8, floor: int = 16 << 20) -> int:
    """A bound on a file that holds ``values`` numbers: ``bytes_per_value`` each (float32 with room
    for the container's overhead by default), and never under ``floor``."""
    return max(floor, bytes_per_value * values)
