"""One frozen scenario of TrainFail/SchedulerPerProcess-v0, as the gym's scenario request gives it.

Pure data: shared by the run kit (what to launch) and the judge (what to expect). Nothing
here is private: the run phase reads the same request from ``/io/scenarios.json``.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

#: Scenario names become file and folder names on both sides.
NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
#: Initial-weight and data generators (``fixtures.py``).
FIXTURE_FLAVORS = ("grader", "prepare")
#: transformers.get_scheduler names the scenarios use.
SCHEDULES = ("linear", "cosine", "polynomial", "constant", "constant_with_warmup")


@dataclass(frozen=True)
class Scenario:
    """Processes, schedule, accumulation, inputs and pass thresholds of one scenario.

    Every field below ``backend`` may be set from the scenario's ``params`` table; the
    defaults are the base scenario's values.
    """

    name: str
    kind: str
    devices: int
    backend: str
    processes: int = 2
    seed: int = 7
    #: ``grader``: the grader's own generator; ``prepare``: the shipped ``demandnet.prepare``
    #: recipe (so the shipped seed gives the shipped initial weights and data).
    fixtures: str = "grader"
    #: optimizer updates per epoch; the data has exactly updates x processes x batch x accumulation rows
    updates_per_epoch: int = 12
    epochs: int = 1
    per_device_batch_size: int = 8
    gradient_accumulation_steps: int = 1
    lr: float = 0.05
    momentum: float = 0.9
    lr_scheduler_type: str = "linear"
    warmup_steps: int = 4
    scheduler_kwargs: dict[str, Any] = field(default_factory=dict)
    input_dim: int = 12
    hidden_size: int = 48
    output_dim: int = 2
    #: |logged lr - spec lr| <= lr_atol_ratio x peak lr at every update
    lr_atol_ratio: float = 1e-6
    param_atol: float = 1e-5
    loss_rtol: float = 1e-5
    run_timeout_s: float = 540.0

    def __post_init__(self) -> None:
        if not NAME_RE.match(self.name):
            raise ValueError(f"scenario name {self.name!r} is not a plain file name")
        if self.fixtures not in FIXTURE_FLAVORS:
            raise ValueError(f"fixtures must be one of {FIXTURE_FLAVORS}, not {self.fixtures!r}")
        if self.lr_scheduler_type not in SCHEDULES:
            raise ValueError(f"lr_scheduler_type must be one of {SCHEDULES}, not {self.lr_scheduler_type!r}")
        if min(self.processes, self.updates_per_epoch, self.epochs, self.per_device_batch_size,
               self.gradient_accumulation_steps) < 1:
            raise ValueError("processes, updates, epochs, batch size and accumulation must be positive")
        if self.processes != self.devices:
            raise ValueError(f"processes={self.processes} but the scenario holds {self.devices} devices")

    @classmethod
    def from_request(cls, raw: dict[str, Any]) -> Scenario:
        """Build from ``{"name", "kind", "devices", "backend", "params": {...}}``."""
        known = {f.name for f in fields(cls)}
        params = raw.get("params", {})
        unknown = set(params) - known
        if unknown:
            raise ValueError(f"unknown scenario params: {sorted(unknown)}")
        return cls(name=raw["name"], kind=raw["kind"], devices=int(raw["devices"]),
                   backend=raw.get("backend", "gloo"), **params)

    @property
    def rows_per_update(self) -> int:
        """Rows one optimizer update consumes over all processes (the global batch)."""
        return self.processes * self.per_device_batch_size * self.gradient_accumulation_steps

    @property
    def rows(self) -> int:
        """Rows of the dataset: a whole number of global batches, so no process pads."""
        return self.updates_per_epoch * self.rows_per_update

    @property
    def total_updates(self) -> int:
        """Optimizer updates of the whole run."""
        return self.updates_per_epoch * self.epochs

    @property
    def parameter_count(self) -> int:
        """Parameters of the README's model at these sizes."""
        d, h, o = self.input_dim, self.hidden_size, self.output_dim
        return (d * h + h) + (h * h + h) + (h * o + o)

    @property
    def state_limit_bytes(self) -> int:
        """The most the saved model may weigh: twice the model in float32, never under 16 MiB."""
        return max(16 << 20, 8 * self.parameter_count)


def read_requests(path: Path) -> list[dict[str, Any]]:
    """The scenario requests of ``scenarios.json`` (a JSON list of objects)."""
    raw = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(raw, list) or not all(isinstance(r, dict) for r in raw):
        raise ValueError(f"{path}: expected a JSON list of scenario objects")
    return raw
