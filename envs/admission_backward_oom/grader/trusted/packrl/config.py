"""Model and runtime settings of a trainer rank."""
from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from typing import Any

#: The vocabulary head projects rows in chunks of this many physical rows.
PROJECTION_CHUNK_ROWS = 512
#: Vocabulary rows of the head weight are padded to a multiple of this.
VOCAB_PAD_MULTIPLE = 128
#: Bytes per element of BF16 activations and parameters.
BF16_BYTES = 2


@dataclass(frozen=True)
class ModelConfig:
    """The decoder the rank trains."""

    vocab_size: int = 4000
    hidden_size: int = 64
    num_layers: int = 4
    num_heads: int = 4
    ffn_hidden_size: int = 128
    seed: int = 0

    @property
    def padded_vocab(self) -> int:
        m = VOCAB_PAD_MULTIPLE
        return (self.vocab_size + m - 1) // m * m


@dataclass(frozen=True)
class RuntimeConfig:
    """How the rank executes a call."""

    #: activation recompute: "full" (one decoder layer per checkpoint), "selective"
    #: (attention only) or "none"
    recompute: str = "full"
    #: "bf16" or "fp8" (fp8 matmuls are a GPU-only path)
    precision: str = "bf16"
    #: gradient hooks registered on the vocabulary head (logging, clipping probes)
    head_hooks: bool = False
    tensor_parallel: int = 1


def from_dict(cls: type, raw: dict[str, Any] | None) -> Any:
    """A config dataclass from a JSON table (unknown keys refused)."""
    raw = dict(raw or {})
    known = {f.name for f in fields(cls)}
    unknown = set(raw) - known
    if unknown:
        raise ValueError(f"unknown {cls.__name__} keys: {sorted(unknown)}")
    return cls(**raw)


def to_dict(obj: Any) -> dict[str, Any]:
    return asdict(obj)
