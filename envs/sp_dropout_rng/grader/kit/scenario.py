"""A frozen SPDropoutRNG scenario: the request both phases read (nothing private here).

Defaults are the ``base`` scenario: TP=2 with sequence parallelism, 6 steps of 4 sequences of
16 positions, hidden 32, p = 0.1.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from scenario_base import params_base, size_limit  # the harness library

#: megatron-core's model-parallel stream on TP rank r is seeded ``train.seed + 2718 + r``.
MODEL_PARALLEL_OFFSET = 2718


@dataclass(frozen=True)
class Scenario(params_base(Path(__file__).with_name("params.toml"))):
    """Tensor-parallel layout, model and data sizes, the streams' seeds and the judge's thresholds
    (``params.toml``: the base scenario)."""

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
