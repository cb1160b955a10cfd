"""One frozen scenario of TrainFail/ScalerInfSync-v1 (public: the run phase reads it too)."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from scenario_base import params_base  # the harness library (on the path in grading sandboxes)

PATTERNS = ("none", "demand", "returns", "both", "alternate")


@dataclass(frozen=True)
class Scenario(params_base(Path(__file__).with_name("params.toml"))):
    """Ranks (the scenario's devices), the table's extreme rows, the scaler's settings."""

    def validate(self) -> None:
        if self.extremes not in PATTERNS:
            raise ValueError(f"extremes={self.extremes!r}: one of {PATTERNS}")
        if any(not 0 <= s < self.steps for s in self.extreme_steps):
            raise ValueError(f"extreme_steps {self.extreme_steps} outside 0..{self.steps - 1}")
        if not -self.devices <= self.extreme_rank < self.devices:
            raise ValueError(f"extreme_rank={self.extreme_rank} with {self.devices} ranks")

    @property
    def world(self) -> int:
        return self.devices

    @property
    def rows(self) -> int:
        return self.steps * self.world * self.rows_per_rank
