"""One frozen scenario of TrainFail/ZeroBoundaryMicrobatch-v1 (public: the run phase reads it too).

``devices`` is the number of data-parallel ranks torchrun starts. Every field has the base
scenario's value as its default; ``grader/scenarios.toml`` overrides them by name.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from scenario_base import ScenarioBase, size_limit  # the harness library

FIXTURE_FLAVORS = ("grader", "prepare")
#: ``identical``: every rank's slice of a global batch is a copy of rank 0's (the healthy control).
SHARD_KINDS = ("distinct", "identical")
#: The ZeRO stages DeepSpeed runs with bf16 weights and fp32 accumulation (stage 0 refuses the mix).
ZERO_STAGES = (1, 2)


@dataclass(frozen=True)
class Scenario(ScenarioBase):
    """Split of the global batch, documented options, inputs and tolerances of one scenario."""

    run_timeout_s: float = 300.0
    seed: int = 11
    #: ``grader``: the grader's own draw; ``prepare``: the shipped ``surrogate.prepare`` recipe.
    fixtures: str = "grader"
    shards: str = "distinct"
    micro_batch: int = 4
    #: Rows per micro-batch are ``micro_batch * row_scale`` (profiles scale batches with it).
    row_scale: int = 1
    accumulation: int = 4
    steps: int = 8
    #: Rows of the dataset file; 0: exactly ``steps`` global batches. Fewer rows make global
    #: batches wrap around the end of the file (the README's rule), some straddling it.
    rows: int = 0
    lr: float = 0.2
    input_dim: int = 16
    hidden_size: int = 64
    num_layers: int = 2
    output_dim: int = 8
    #: Documented options: ``precision.bf16``, ``deepspeed.zero_stage``, ``deepspeed.gradient_clipping``.
    bf16: bool = True
    zero_stage: int = 1
    gradient_clipping: float = 0.0
    #: ``parallel.data_parallel_size`` written in the config; 0: the rank count torchrun starts.
    #: Any other value must differ from it (training takes its rank count from the process group).
    config_ranks: int = 0
    #: ``train.log_interval``; 0: the config's own (console output only).
    log_interval: int = 0
    #: Largest relative L2 of the gradient a step applies against the judge's float64 gradient.
    grad_rtol: float = 2e-2
    #: Largest |recorded weight - replayed SGD step| (fp32; the replay is exact in practice).
    replay_atol: float = 1e-6

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
