"""One frozen scenario of TrainFail/StaleOptimizerParams-v1 (public: the run phase reads it too)."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from scenario_base import params_base  # the harness library (on the path in grading sandboxes)


@dataclass(frozen=True)
class Scenario(params_base(Path(__file__).with_name("params.toml"))):
    """Ranks (the scenario's devices), optimizer settings, what trains, tolerances."""

    def validate(self) -> None:
        if self.optim not in ("adamw", "sgd"):
            raise ValueError(f"optim={self.optim!r}: adamw or sgd")
        if self.trainable not in ("all", "blocks"):
            raise ValueError(f"trainable={self.trainable!r}: all or blocks")
        if self.rows < self.devices * self.per_rank:
            raise ValueError("the table holds less than one global batch")

    @property
    def world(self) -> int:
        return self.devices
