"""A frozen SPDropoutRNG scenario: the request both phases read (nothing private here).

Defaults are the ``base`` scenario: TP=2 with sequence parallelism, 6 steps of 4 sequences of
16 positions, hidden 32, p = 0.1.
"""
from __future__ import annotations

from dataclasses import dataclass

from scenario_base import ScenarioBase, size_limit  # the harness library

#: megatron-core's model-parallel stream on TP rank r is seeded ``train.seed + 2718 + r``.
MODEL_PARALLEL_OFFSET = 2718


@dataclass(frozen=True)
class Scenario(ScenarioBase):
    """Tensor-parallel layout, model and data sizes, the streams' seeds and the judge's thresholds."""

    tp: int = 2
    sequence_parallel: bool = True
    seed: int = 11
    data_seed: int = 5
    steps: int = 6
    lr: float = 0.05
    seq_length: int = 16
    batch_size: int = 4
    input_dim: int = 8
    hidden_size: int = 32
    ffn_hidden_size: int = 64
    num_layers: int = 2
    output_dim: int = 4
    hidden_dropout: float = 0.1
    embed_dropout: float = 0.1
    #: ``model.bf16``: the blocks under a bf16 autocast (recorded, on CPU ranks not applied)
    bf16: bool = False
    #: ``shipped``: configs/tp2-sp.toml as it is (only the run name and output folder set).
    config: str = "grader"
    #: Most positions two independent masks may share (p^2 + (1-p)^2 = 0.82 at p = 0.1).
    max_agreement: float = 0.92
    rate_tolerance: float = 0.06
    #: |recorded next weight - the judge's float64 README step from the recorded masks|.
    update_atol: float = 2e-5
    run_timeout_s: float = 300.0

    def validate(self) -> None:
        if self.tp != self.devices or self.config not in ("grader", "shipped") or self.steps < 1:
            raise ValueError(f"{self.name}: tp={self.tp} on {self.devices} devices, config {self.config!r}, "
                             f"{self.steps} steps")
        if self.bf16 and self.config == "shipped":
            raise ValueError(f"{self.name}: the shipped config keeps bf16 off: use config = 'grader' for it")
        if self.ffn_hidden_size % self.tp or self.seq_length % self.tp:
            raise ValueError(f"{self.name}: ffn {self.ffn_hidden_size}, sequence {self.seq_length} over tp={self.tp}")

    @property
    def dropout_modules(self) -> list[tuple[str, float]]:
        """The README's dropout modules in the order they run, with their probabilities."""
        blocks = [(f"stack.layers.{i}.hidden_dropout", self.hidden_dropout) for i in range(self.num_layers)]
        return [("embed_dropout", self.embed_dropout), *blocks]

    @property
    def mask_shape(self) -> tuple[int, int, int]:
        """One rank's dropout activations: ``[s/tp, b, h]`` split, ``[s, b, h]`` replicated."""
        rows = self.seq_length // self.tp if self.sequence_parallel else self.seq_length
        return rows, self.batch_size, self.hidden_size

    @property
    def autocast_state(self) -> str:
        """The autocast the probe records for a module run under ``model.bf16``."""
        return f"{'cuda' if self.backend == 'nccl' else 'cpu'}:bfloat16"

    @property
    def parameter_count(self) -> int:
        h, f = self.hidden_size, self.ffn_hidden_size
        block = 2 * h + (h * f + f) + (f * h + h)
        return (self.input_dim * h + h) + self.num_layers * block + 2 * h + (h * self.output_dim + self.output_dim)

    @property
    def record_limit_bytes(self) -> int:
        """Per step the model in float32, every mask and an RNG state, doubled."""
        masks = len(self.dropout_modules) * self.seq_length * self.batch_size * self.hidden_size
        return size_limit(self.steps * (4 * self.parameter_count + masks + 8192), bytes_per_value=2)

    @property
    def state_limit_bytes(self) -> int:
        return size_limit(self.parameter_count)
