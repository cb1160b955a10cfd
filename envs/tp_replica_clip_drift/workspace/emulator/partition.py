"""The tensor-parallel partitioning of the emulator's parameters.

Only the feed-forward layers are partitioned: ``fc1`` (ColumnParallelLinear) along its
output features, weight and bias (dim 0); ``fc2`` (RowParallelLinear) along its input
features, weight only (dim 1). Partition ``r`` of ``N`` equal contiguous partitions lives on
tensor-parallel rank ``r``. Every other parameter is replicated: each rank holds all of it.
"""
from __future__ import annotations

import re

import torch

_PARTITIONED = (
    (re.compile(r"\.mlp\.fc1\.(?:weight|bias)$"), 0),
    (re.compile(r"\.mlp\.fc2\.weight$"), 1),
)


def partition_dim(name: str) -> int | None:
    """The dimension ``name`` is partitioned along; None when it is replicated."""
    for pattern, dim in _PARTITIONED:
        if pattern.search(name):
            return dim
    return None


def is_replicated(name: str) -> bool:
    return partition_dim(name) is None


def partition(name: str, full: torch.Tensor, rank: int, world: int) -> torch.Tensor:
    """Rank ``rank``'s partition of ``full``."""
    dim = partition_dim(name)
    if dim is None:
        return full
    size = full.shape[dim] // world
    return full.narrow(dim, rank * size, size)


def unpartition(name: str, partitions: list[torch.Tensor]) -> torch.Tensor:
    """``full`` from the partitions of every rank (rank 0's copy for a replicated one)."""
    dim = partition_dim(name)
    return partitions[0] if dim is None else torch.cat(partitions, dim)
