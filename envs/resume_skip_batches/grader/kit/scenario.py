"""One frozen scenario of TrainFail/ResumeSkipBatches-v0, as the gym's scenario request gives it.

Pure data, shared by the run kit (what to launch) and the judge (what to expect). Nothing here
is private: the run phase reads the same request from ``/io/scenarios.json``.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

#: Scenario names become file and folder names on both sides.
NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
#: ``grader``: the grader's own generator; ``prepare``: the shipped ``fcast.prepare`` recipe.
FIXTURE_FLAVORS = ("grader", "prepare")


@dataclass(frozen=True)
class Scenario:
    """Data, schedule, interruption points and pass thresholds of one scenario.

    Every field below ``backend`` may be set from the scenario's ``params`` table; the defaults
    are the shipped ``configs/base.yaml`` values.
    """

    name: str
    kind: str
    devices: int
    backend: str
    seed: int = 1234
    fixtures: str = "grader"
    rows: int = 640
    input_dim: int = 8
    hidden_size: int = 32
    micro_batch_size: int = 8
    shuffle_seed: int = 17
    accumulation: int = 4
    max_steps: int = 24
    lr: float = 0.05
    momentum: float = 0.9
    #: The run is stopped after each of these global steps (``train.max_steps=K``) and resumed
    #: from ``checkpoint-K``; the last segment runs to ``max_steps``.
    interrupts: tuple[int, ...] = field(default=(6,))
    #: Largest relative L2 distance (all parameters as one vector) between a saved model and the judge's float64
    #: uninterrupted reference; grader/README.md gives the measurements behind it.
    param_rtol: float = 1e-4
    run_timeout_s: float = 240.0

    def __post_init__(self) -> None:
        if not NAME_RE.match(self.name):
            raise ValueError(f"scenario name {self.name!r} is not a plain file name")
        if self.fixtures not in FIXTURE_FLAVORS:
            raise ValueError(f"fixtures must be one of {FIXTURE_FLAVORS}, not {self.fixtures!r}")
        object.__setattr__(self, "interrupts", tuple(int(k) for k in self.interrupts))
        points = [0, *self.interrupts, self.max_steps]
        if any(b <= a for a, b in zip(points, points[1:])):
            raise ValueError(f"interrupts {self.interrupts} must rise strictly inside (0, {self.max_steps})")
        if self.updates_per_epoch < 1:
            raise ValueError("a rank's shard does not fill one accumulation window")

    @classmethod
    def from_request(cls, raw: dict[str, Any]) -> Scenario:
        """Build from ``{"name", "kind", "devices", "backend", "params": {...}}``."""
        known = {f.name for f in fields(cls)}
        params = dict(raw.get("params", {}))
        unknown = set(params) - known
        if unknown:
            raise ValueError(f"unknown scenario params: {sorted(unknown)}")
        if "interrupts" in params:
            params["interrupts"] = tuple(params["interrupts"])
        return cls(name=str(raw["name"]), kind=str(raw["kind"]), devices=int(raw["devices"]),
                   backend=str(raw.get("backend", "gloo")), **params)

    @property
    def world_size(self) -> int:
        """Data-parallel ranks: one per device."""
        return self.devices

    @property
    def micro_batches_per_rank(self) -> int:
        """``len(loader)`` on every rank (DistributedSampler and DataLoader both drop the rest)."""
        return (self.rows // self.world_size) // self.micro_batch_size

    @property
    def updates_per_epoch(self) -> int:
        """Global steps per epoch: whole accumulation windows of a rank's shard."""
        return self.micro_batches_per_rank // self.accumulation

    @property
    def segments(self) -> list[tuple[int, int]]:
        """``(first step done, last step done)`` of each launch: (0, K1), (K1, K2), ..."""
        points = [0, *self.interrupts, self.max_steps]
        return list(zip(points, points[1:]))

    @property
    def state_limit_bytes(self) -> int:
        """The most a saved model may weigh: four times the float32 model, and at least 1 MiB."""
        params = self.input_dim * self.hidden_size + 2 * self.hidden_size + 1
        return max(1 << 20, 16 * params)

    @property
    def record_limit_bytes(self) -> int:
        """The most one rank's input record of one launch may weigh: every micro-batch of the
        whole run, twice, and at least 1 MiB."""
        forwards = self.max_steps * self.accumulation
        return max(1 << 20, 2 * forwards * (8 + 4 * self.micro_batch_size * self.input_dim))


def read_requests(path: Path) -> list[dict[str, Any]]:
    """The scenario requests of ``scenarios.json`` (a JSON list of objects)."""
    raw = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(raw, list) or not all(isinstance(r, dict) for r in raw):
        raise ValueError(f"{path}: expected a JSON list of scenario objects")
    return raw
