"""A frozen scenario of TrainFail/TPClipGradNorm-v1 (read by both phases: nothing private)."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from scenario_base import params_base, size_limit  # the harness library

#: ``grader``: the grader's own generator; ``prepare``: the shipped ``surrogate.prepare`` recipe.
FIXTURES = ("grader", "prepare")
#: The README's layout table: the split dimension of ``blocks.<i>.mlp.<leaf>``.
SPLIT = {"fc1.weight": 0, "fc1.bias": 0, "fc2.weight": 1}


def split_dim(name: str) -> int | None:
    """Where the README splits ``name`` across tensor-parallel ranks (None: replicated)."""
    owner, sep, leaf = name.rpartition(".mlp.")
    return SPLIT.get(leaf) if sep and owner.startswith("blocks.") else None


@dataclass(frozen=True)
class Scenario(params_base(Path(__file__).with_name("params.toml"))):
    """Topology, the README's settings, inputs and tolerances (``params.toml``: the base scenario)."""

    def validate(self) -> None:
        if self.fixtures not in FIXTURES:
            raise ValueError(f"fixtures {self.fixtures!r}: expected one of {FIXTURES}")
        if self.tp != self.devices or self.ffn_hidden_size % self.tp:
            raise ValueError(f"tp={self.tp} on {self.devices} devices, ffn_hidden_size={self.ffn_hidden_size}")
        if min(self.steps, self.batch_size) < 1 or self.zero_stage not in (1, 2):
            raise ValueError(f"steps={self.steps}, batch_size={self.batch_size}, zero_stage={self.zero_stage}: "
                             "not a run the README supports")
        if self.rows and self.rows < self.batch_size:
            raise ValueError(f"rows={self.rows}: fewer than one batch of {self.batch_size}")

    @property
    def dataset_rows(self) -> int:
        return self.rows or self.steps * self.batch_size

    @property
    def clipping(self) -> bool:
        return self.max_norm > 0

    def batch_rows(self, step: int) -> list[int]:
        """The dataset rows step ``step`` trains on (file order, wrapping around)."""
        start = step * self.batch_size
        return [(start + k) % self.dataset_rows for k in range(self.batch_size)]

    @property
    def parameter_count(self) -> int:
        """Parameters of the full (TP=1) model."""
        h, f = self.hidden_size, self.ffn_hidden_size
        block = 2 * h + (h * f + f) + (f * h + h)
        return (self.input_dim + 1) * h + self.num_layers * block + 2 * h + (h + 1) * self.output_dim

    @property
    def state_limit_bytes(self) -> int:
        """One rank's saved model file: at most the full model in float32, with room."""
        return size_limit(self.parameter_count, floor=64 << 20)
