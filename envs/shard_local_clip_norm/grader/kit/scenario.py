"""One frozen scenario of TrainFail/ShardLocalClipNorm-v1 (public: the run phase reads it too)."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from scenario_base import params_base  # the harness library (on the path in grading sandboxes)


@dataclass(frozen=True)
class Scenario(params_base(Path(__file__).with_name("params.toml"))):
    """Ranks (the scenario's devices), accumulation, the clipping settings."""

    def validate(self) -> None:
        broken = [rule for rule, holds in (
            ('norm_type "2" or "inf"', self.norm_type in ("2", "inf")),
            ("max_grad_norm > 0", self.max_grad_norm > 0),
            ("accum_steps >= 1 and steps >= 1", min(self.accum_steps, self.steps) >= 1),
        ) if not holds]  # fmt: skip
        if broken:
            raise ValueError(f"{self.name}: " + "; ".join(broken))

    # the ranks are the scenario's devices; one update draws world x accum_steps x rows_per_rank rows
    world = property(lambda self: self.devices)
    global_rows = property(lambda self: self.world * self.accum_steps * self.rows_per_rank)
    rows = property(lambda self: self.steps * self.global_rows)
