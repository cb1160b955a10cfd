"""One frozen scenario of TrainFail/DDPBypassDrift-v1 (public: the run phase reads it too).

``devices`` is the number of data-parallel ranks torchrun starts. Every field has the base
scenario's value as its default; ``grader/scenarios.toml`` overrides them by name.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

from scenario_base import params_base, size_limit  # the harness library

#: Initial-weight and data generators (``fixtures.py``).
FIXTURE_FLAVORS = ("grader", "prepare")
#: Rows the shipped ``gaitnet.prepare`` writes.
PREPARE_ROWS = 4096


@dataclass(frozen=True)
class Scenario(params_base(Path(__file__).with_name("params.toml"))):
    """Ranks, training settings, inputs and pass thresholds of one scenario (``params.toml``: the
    base scenario)."""

    def validate(self) -> None:
        if self.fixtures not in FIXTURE_FLAVORS:
            raise ValueError(f"fixtures must be one of {FIXTURE_FLAVORS}, not {self.fixtures!r}")
        if self.steps < 1 or self.global_batch_size % self.devices:
            raise ValueError(f"steps={self.steps}, global_batch_size={self.global_batch_size} on {self.devices} ranks")
        if self.rows and (self.fixtures == "prepare" or self.rows < self.global_batch_size):
            raise ValueError(f"rows={self.rows}: the grader's data only, at least one global batch")
        if self.launch_key_ranks and self.launch_key_ranks == self.devices:
            raise ValueError("launch_key_ranks equal to the rank count is the default (0)")

    @property
    def dataset_rows(self) -> int:
        if self.fixtures == "prepare":
            return PREPARE_ROWS
        return self.rows or self.steps * self.global_batch_size

    @property
    def shapes(self) -> dict[str, tuple[int, ...]]:
        """Parameter names and shapes of the README's model at these sizes."""
        d, h, e, c = self.input_dim, self.hidden_size, self.embed_dim, self.num_classes
        return {"proj_in.weight": (h, d), "proj_in.bias": (h,), "proj_out.weight": (e, h),
                "proj_out.bias": (e,), "norm.weight": (e,), "norm.bias": (e,),
                "head.weight": (c, e), "head.bias": (c,)}

    @property
    def state_limit_bytes(self) -> int:
        return size_limit(sum(math.prod(s) for s in self.shapes.values()))

    @property
    def record_limit_bytes(self) -> int:
        """Parameters and gradients of every step plus the final parameters, float32, with room."""
        return size_limit((2 * self.steps + 1) * sum(math.prod(s) for s in self.shapes.values()))
