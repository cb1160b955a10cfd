"""The dataset file and the rows each rank trains on at every step.

The file holds ``{"x": [N, input_dim], "x_view": [N, input_dim], "y": [N]}``. Step ``k``'s
global batch is rows ``k*G .. k*G + G - 1``, counted modulo ``N`` (the file wraps around);
rank ``r`` of ``W`` takes every ``W``-th row of it from its ``r``-th, the way
``DistributedSampler`` without shuffling deals rows out.
"""
from __future__ import annotations

from collections.abc import Iterator

import torch

Dataset = dict[str, torch.Tensor]
Batch = tuple[torch.Tensor, torch.Tensor, torch.Tensor]


def load_dataset(path: str) -> Dataset:
    data: Dataset = torch.load(path, map_location="cpu", weights_only=True)
    rows = len(data["y"])
    if data["x"].shape[0] != rows or data["x_view"].shape != data["x"].shape:
        raise ValueError(f"{path}: x, x_view and y do not have the same {rows} rows")
    return data


def local_batches(data: Dataset, global_batch_size: int, rank: int, world: int, steps: int) -> Iterator[Batch]:
    """This rank's ``(x, x_view, y)`` for steps ``0 .. steps-1``."""
    if global_batch_size % world:
        raise ValueError(f"a global batch of {global_batch_size} rows cannot be dealt to {world} ranks evenly")
    positions = torch.arange(rank, global_batch_size, world)
    for step in range(steps):
        rows = (positions + step * global_batch_size) % len(data["y"])
        yield data["x"][rows], data["x_view"][rows], data["y"][rows]
