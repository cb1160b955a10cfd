"""One frozen scenario of TrainFail/ZeroBoundaryMicrobatch-v1 (public: the run phase reads it too).

``devices`` is the number of data-parallel ranks torchrun starts. ``params.toml`` holds the base
scenario; ``grader/scenarios.toml`` overrides its params by name.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

from scenario_base import params_base, size_limit  # the harness library

FIXTURE_FLAVORS = ("grader", "prepare")
#: ``identical``: every rank's slice of a global batch is a copy of rank 0's (the healthy control).
SHARD_KINDS = ("distinct", "identical")
#: The ZeRO stages DeepSpeed runs with bf16 weights and fp32 accumulation (stage 0 refuses the mix).
ZERO_STAGES = (1, 2)


@dataclass(frozen=True)
class Scenario(params_base(Path(__file__).with_name("params.toml"))):
    """Split of the global batch, documented options, inputs and tolerances of one scenario
    (``params.toml``: the base scenario)."""

    def validate(self) -> None:
        if self.fixtures not in FIXTURE_FLAVORS or self.shards not in SHARD_KINDS or self.zero_stage not in ZERO_STAGES:
            raise ValueError(f"fixtures {self.fixtures!r}, shards {self.shards!r}, zero_stage {self.zero_stage} "
                             f"not in {FIXTURE_FLAVORS}, {SHARD_KINDS}, {ZERO_STAGES}")
        if min(self.micro_batch, self.row_scale, self.accumulation, self.steps, self.num_layers) < 1:
            raise ValueError("micro_batch, row_scale, accumulation, steps and num_layers must be positive")
        if self.rows and (self.rows < self.global_batch or self.shards == "identical"):
            raise ValueError(f"rows={self.rows}: at least one {self.global_batch}-row global batch, distinct shards")
        if self.config_ranks == self.devices:
            raise ValueError("config_ranks equal to the rank count is the default (0)")

    @property
    def micro_rows(self) -> int:
        """Rows per rank per forward/backward (the pipeline's ``data.micro_batch_size``)."""
        return self.micro_batch * self.row_scale

    @property
    def global_batch(self) -> int:
        return self.micro_rows * self.accumulation * self.devices

    @property
    def dataset_rows(self) -> int:
        return self.rows or self.global_batch * self.steps

    @property
    def shapes(self) -> list[tuple[str, tuple[int, ...]]]:
        """Parameter names and shapes in the model's order (the workspace README's model)."""
        dims = [self.input_dim] + [self.hidden_size] * self.num_layers + [self.output_dim]
        return [(f"net.{2 * i}.{kind}", (fan_out, fan_in) if kind == "weight" else (fan_out,))
                for i, (fan_in, fan_out) in enumerate(zip(dims, dims[1:], strict=False)) for kind in ("weight", "bias")]

    @property
    def parameter_count(self) -> int:
        return sum(math.prod(shape) for _, shape in self.shapes)

    @property
    def state_limit_bytes(self) -> int:
        return size_limit(self.parameter_count)

    @property
    def record_limit_bytes(self) -> int:
        """Weights and gradient of every step plus the final weights, fp32, with room to spare."""
        return size_limit((2 * self.steps + 1) * self.parameter_count)
