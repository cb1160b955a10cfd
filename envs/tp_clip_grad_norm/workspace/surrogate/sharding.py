"""Which parameters are split across the tensor-parallel ranks, and along which axis.

Only the feed-forward layers inside the residual blocks are split (Megatron layout): ``fc1``
(column-parallel) by output features, weight and bias; ``fc2`` (row-parallel) by input
features, weight only. Rank ``r`` of ``n`` holds the ``r``-th of ``n`` equal contiguous pieces;
every other parameter is a full copy on every rank.
"""
from __future__ import annotations

import torch

#: ``blocks.<i>.mlp.<leaf>`` -> split axis
SPLIT_AXIS = {"fc1.weight": 0, "fc1.bias": 0, "fc2.weight": 1}


def split_axis(name: str) -> int | None:
    """The axis ``name`` is split along, or None for a replicated parameter."""
    owner, found, leaf = name.rpartition(".mlp.")
    if not found or not owner.startswith("blocks."):
        return None
    return SPLIT_AXIS.get(leaf)


def local_piece(name: str, full: torch.Tensor, rank: int, ranks: int) -> torch.Tensor:
    """What rank ``rank`` of ``ranks`` holds of the full tensor ``name``."""
    axis = split_axis(name)
    return full if axis is None else torch.tensor_split(full, ranks, dim=axis)[rank]


def reassemble(name: str, pieces: list[torch.Tensor]) -> torch.Tensor:
    """The full tensor from every rank's piece, in rank order."""
    axis = split_axis(name)
    return pieces[0] if axis is None else torch.cat(pieces, dim=axis)
