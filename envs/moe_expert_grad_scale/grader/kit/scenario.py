"""A frozen MoEExpertGradScale scenario: the request both phases read (nothing private here).

Defaults are the shipped ``configs/ep2.yaml`` on 2 ranks; ``world`` is how many processes the
run kit starts, never a config key (the pipeline takes its rank count from the process group).
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from scenario_base import params_base, size_limit  # the harness library

#: The README's dense (non-expert) parameters, and the parameters of one expert.
DENSE_NAMES = ("input_proj.weight", "input_proj.bias", "moe.deepspeed_moe.gate.wg.weight", "head.weight", "head.bias")
EXPERT_NAMES = ("0.weight", "0.bias", "2.weight", "2.bias")


@dataclass(frozen=True)
class Scenario(params_base(Path(__file__).with_name("params.toml"))):
    """Ranks, expert-parallel size, ZeRO stage, inputs, hyper-parameters and tolerances
    (``params.toml``: the base scenario)."""

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
