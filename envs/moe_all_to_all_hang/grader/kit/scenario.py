"""The scenario type of TrainFail/MoEAllToAllHang-v1 (public: both phases read it).

The params and their defaults are ``params.toml`` beside this file; here only what is computed:
the checks that refuse an impossible scenario and the quantities both phases derive.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from scenario_base import params_base, size_limit  # the harness library

DENSE = ("embed.weight", "embed.bias", "router.weight", "head.weight", "head.bias")
EXPERT_KEYS = ("0.weight", "0.bias", "2.weight", "2.bias")


@dataclass(frozen=True)
class Scenario(params_base(Path(__file__).with_name("params.toml"))):  # type: ignore[misc]
    def validate(self) -> None:
        if self.world != self.devices:
            raise ValueError(f"{self.name}: world={self.world} but the scenario holds {self.devices} devices")
        if self.world % self.ep or self.num_experts % self.ep:
            raise ValueError(f"{self.name}: ep={self.ep} must divide world={self.world} and num_experts")
        if self.docs_per_step % self.world:
            raise ValueError(f"{self.name}: docs_per_step={self.docs_per_step} does not split over {self.world}")
        if self.top_k not in (1, 2) or self.slab_rows < 1 or not self.doc_lengths:
            raise ValueError(f"{self.name}: top_k 1 or 2, slab_rows >= 1 and some doc_lengths")
        if any(not isinstance(n, int) or n < 1 for n in self.doc_lengths):
            raise ValueError(f"{self.name}: doc_lengths must be positive integers")

    @property
    def lengths(self) -> list[int]:
        """Every document's length, in corpus order."""
        return [int(self.doc_lengths[i % len(self.doc_lengths)]) for i in range(self.documents)]

    def held(self, rank: int) -> list[int]:
        """The global ids of the experts ``rank`` holds: expert-parallel rank ``rank % ep`` takes the
        ``num_experts / ep`` consecutive ids from ``(rank % ep) * num_experts / ep`` (README)."""
        share = self.num_experts // self.ep
        return [(rank % self.ep) * share + i for i in range(share)]

    def expected_names(self, rank: int) -> list[str]:
        return [*DENSE, *(f"experts.{g}.{k}" for g in self.held(rank) for k in EXPERT_KEYS)]

    @property
    def state_limit_bytes(self) -> int:
        values = (self.input_dim + 1) * self.hidden_size + self.hidden_size * self.num_experts
        values += (self.hidden_size + 1) * self.output_dim
        values += self.num_experts * (2 * self.hidden_size * self.ffn_hidden_size + self.ffn_hidden_size + self.hidden_size)
        return size_limit(values, floor=1 << 20)
