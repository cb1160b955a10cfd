"""A frozen MoEExpertGradScale scenario: the request both phases read (nothing private here).

Defaults are the shipped ``configs/ep2.yaml`` on 2 ranks; ``world`` is how many processes the
run kit starts, never a config key (the pipeline takes its rank count from the process group).
"""
from __future__ import annotations

from dataclasses import dataclass

from scenario_base import ScenarioBase, size_limit  # the harness library

#: The README's dense (non-expert) parameters, and the parameters of one expert.
DENSE_NAMES = ("input_proj.weight", "input_proj.bias", "moe.deepspeed_moe.gate.wg.weight", "head.weight", "head.bias")
EXPERT_NAMES = ("0.weight", "0.bias", "2.weight", "2.bias")


@dataclass(frozen=True)
class Scenario(ScenarioBase):
    """Ranks, expert-parallel size, ZeRO stage, inputs, hyper-parameters and tolerances."""

    world: int = 2
    """Processes torchrun starts (the pipeline takes its rank count from the process group)."""
    ep: int = 2
    """``parallel.expert_parallel_size``."""
    zero_stage: int = 2
    """``deepspeed.zero_stage``: 0 reduces in the engine, 1 and 2 in the ZeRO optimizer."""
    seed: int = 1234
    rows: int = 1024
    """Rows of the grader's dataset: fewer than ``steps * global_batch`` and the batches wrap."""
    steps: int = 8
    lr: float = 0.2
    weight_decay: float = 0.01
    global_batch: int = 64
    """``data.global_batch_size``, split in ``world`` contiguous shares."""
    input_dim: int = 16
    hidden_size: int = 32
    ffn_hidden_size: int = 64
    output_dim: int = 4
    num_experts: int = 4
    """Experts of the MoE layer, ``num_experts / ep`` on each rank."""
    aux_loss_coef: float = 0.01
    param_atol: float = 1e-4
    """Worst |saved parameter - float64 reference| (grader/README.md has the measured margins)."""
    loss_atol: float = 1e-4
    """Worst |logged loss - reference objective|."""
    replica_atol: float = 0.0
    """Copies of one parameter on different ranks must agree this well."""
    run_timeout_s: float = 300.0

    def validate(self) -> None:
        if self.world != self.devices:
            raise ValueError(f"{self.name}: world={self.world} ranks on {self.devices} devices")
        if min(self.ep, self.steps, self.rows) < 1 or self.world % self.ep or self.num_experts % self.ep:
            raise ValueError(f"{self.name}: ep={self.ep} must divide world={self.world} and {self.num_experts} experts")
        if self.global_batch % self.world or self.zero_stage not in (0, 1, 2):
            raise ValueError(f"{self.name}: batch {self.global_batch} over {self.world} ranks, ZeRO {self.zero_stage}")

    @property
    def local_experts(self) -> int:
        return self.num_experts // self.ep

    def expert_ids(self, rank: int) -> list[int]:
        """Global experts of rank ``rank``: those of expert-parallel rank ``rank % ep``."""
        first = (rank % self.ep) * self.local_experts
        return list(range(first, first + self.local_experts))

    @property
    def state_limit_bytes(self) -> int:
        """One rank's saved file: at most the full model in float32, twice over."""
        h, f = self.hidden_size, self.ffn_hidden_size
        dense = self.input_dim * h + h + self.num_experts * h + h * self.output_dim + self.output_dim
        return size_limit(dense + self.num_experts * (2 * h * f + f + h))
