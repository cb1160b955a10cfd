"""A frozen RecomputeDropoutRNG scenario: the request both phases read (nothing private here).

Defaults (``params.toml``) are the shipped configuration's values: 2 ranks, 4 blocks of width 32,
every dropout 0.1, each block checkpointed with the non-reentrant implementation, 3 SGD steps of
4 rows of 17 tokens per rank.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from scenario_base import params_base, size_limit  # the harness library

MODES = ("off", "blocks", "segments")


@dataclass(frozen=True)
class Scenario(params_base(Path(__file__).with_name("params.toml"))):
    """Ranks, the model, recomputation and dropout settings, and the judge's tolerances."""

    def validate(self) -> None:
        if self.world_size != self.devices:
            raise ValueError(f"{self.name}: world_size={self.world_size} on {self.devices} devices")
        if self.mode not in MODES or self.config not in ("grader", "shipped") or self.steps < 2:
            raise ValueError(f"{self.name}: mode {self.mode!r}, config {self.config!r}, {self.steps} steps")
        if self.d_model % self.n_heads or self.segments < 1 or self.rows < self.batch_size * self.world_size:
            raise ValueError(f"{self.name}: d_model {self.d_model} / {self.n_heads} heads, {self.segments} "
                             f"segments, {self.rows} rows")

    @property
    def recomputed(self) -> list[str]:
        """The blocks the README says are recomputed during each backward, by name."""
        if self.mode == "off":
            return []
        if self.mode == "blocks":
            return [f"blocks.{i}" for i in range(self.n_layers)]
        segments = min(self.segments, self.n_layers)
        size = self.n_layers // segments  # torch's checkpoint_sequential: all segments but the last
        return [f"blocks.{i}" for i in range(size * (segments - 1))]

    @property
    def dropouts(self) -> list[tuple[str, float, tuple[int, ...]]]:
        """The README's dropout modules in the order a forward runs them: name, p, activation shape."""
        b, t, d, h = self.batch_size, self.seq_len, self.d_model, self.n_heads
        out = [("drop", self.embd_dropout, (b, t, d))]
        for i in range(self.n_layers):
            out += [(f"blocks.{i}.attn.attn_drop", self.attn_dropout, (b, h, t, t)),
                    (f"blocks.{i}.attn.resid_drop", self.resid_dropout, (b, t, d)),
                    (f"blocks.{i}.ffn.drop", self.resid_dropout, (b, t, d))]
        return out

    @property
    def shapes(self) -> dict[str, tuple[int, ...]]:
        """Every parameter of the README's model, as ``model.state_dict()`` names it."""
        d, v = self.d_model, self.vocab_size
        shapes: dict[str, tuple[int, ...]] = {"tok.weight": (v, d), "pos.weight": (self.seq_len, d)}
        for i in range(self.n_layers):
            block = {"ln1.weight": (d,), "ln1.bias": (d,), "attn.qkv.weight": (3 * d, d), "attn.qkv.bias": (3 * d,),
                     "attn.proj.weight": (d, d), "attn.proj.bias": (d,), "ln2.weight": (d,), "ln2.bias": (d,),
                     "ffn.up.weight": (4 * d, d), "ffn.up.bias": (4 * d,), "ffn.down.weight": (d, 4 * d),
                     "ffn.down.bias": (d,)}
            shapes |= {f"blocks.{i}.{leaf}": shape for leaf, shape in block.items()}
        return shapes | {"ln_f.weight": (d,), "ln_f.bias": (d,), "head.weight": (v, d)}

    @property
    def parameter_count(self) -> int:
        total = 0
        for shape in self.shapes.values():
            n = 1
            for s in shape:
                n *= s
            total += n
        return total

    @property
    def record_limit_bytes(self) -> int:
        """Per rank: parameters and gradients of every step and the final parameters (float32),
        the inputs and an RNG state per step, doubled."""
        return size_limit((2 * self.steps + 1) * self.parameter_count + self.steps * 8192, bytes_per_value=8)

    @property
    def state_limit_bytes(self) -> int:
        return size_limit(self.parameter_count)
