"""A frozen scenario of TrainFail/TPClipGradNorm-v1 (read by both phases: nothing private)."""
from __future__ import annotations

from dataclasses import dataclass

from scenario_base import ScenarioBase, size_limit  # the harness library

#: ``grader``: the grader's own generator; ``prepare``: the shipped ``surrogate.prepare`` recipe.
FIXTURES = ("grader", "prepare")
#: The README's layout table: the split dimension of ``blocks.<i>.mlp.<leaf>``.
SPLIT = {"fc1.weight": 0, "fc1.bias": 0, "fc2.weight": 1}


def split_dim(name: str) -> int | None:
    """Where the README splits ``name`` across tensor-parallel ranks (None: replicated)."""
    owner, sep, leaf = name.rpartition(".mlp.")
    return SPLIT.get(leaf) if sep and owner.startswith("blocks.") else None


@dataclass(frozen=True)
class Scenario(ScenarioBase):
    """Topology, the README's settings, inputs and tolerances (defaults: the base scenario)."""

    tp: int = 2
    seed: int = 11
    fixtures: str = "grader"
    steps: int = 24
    #: rows of the dataset; 0: ``steps x batch_size`` (no batch wraps around the file)
    rows: int = 0
    batch_size: int = 64
    lr: float = 0.1
    max_norm: float = 0.5
    zero_stage: int = 1
    log_interval: int = 5
    input_dim: int = 16
    hidden_size: int = 32
    ffn_hidden_size: int = 128
    num_layers: int = 2
    output_dim: int = 4
    param_atol: float = 1e-5
    norm_rtol: float = 1e-5
    loss_rtol: float = 1e-5
    #: guards on the scenario itself: a clipping scenario must clip, one meant to cover
    #: unclipped steps must have some
    min_clipped_fraction: float = 0.5
    min_unclipped_steps: int = 0
    run_timeout_s: float = 420.0

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
