"""How the tensor-parallel model's parameters are split across ranks.

A parameter whose name ends with a key of ``PARTITION_DIMS`` is split into equal
contiguous chunks along that dimension, chunk ``r`` living on tensor-parallel rank ``r``
(Megatron layout: column-parallel ``fc1`` by output rows, row-parallel ``fc2`` by input
columns). Every other parameter is a full copy on every rank.
"""
from __future__ import annotations

import torch

PARTITION_DIMS: dict[str, int] = {
    "mlp.fc1.weight": 0,
    "mlp.fc1.bias": 0,
    "mlp.fc2.weight": 1,
}


def partition_dim(name: str) -> int | None:
    """Dimension along which parameter ``name`` is split, or None if it is replicated."""
    for ending, dim in PARTITION_DIMS.items():
        if name.endswith(ending):
            return dim
    return None


def shard(name: str, full: torch.Tensor, rank: int, size: int) -> torch.Tensor:
    """The part of the full tensor that tensor-parallel rank ``rank`` of ``size`` holds."""
    dim = partition_dim(name)
    if dim is None:
        return full
    return full.chunk(size, dim)[rank]


def merge(name: str, parts: list[torch.Tensor]) -> torch.Tensor:
    """Rebuild a full tensor from the per-rank parts, in rank order."""
    dim = partition_dim(name)
    if dim is None:
        return parts[0]
    return torch.cat(parts, dim)
