"""Training data: a ``torch.save``d dict ``{"x": [N, input_dim], "y": [N, output_dim]}``.

Step ``i`` consumes the global batch of ``G = micro_batch_size x gradient_accumulation_steps x
world_size`` rows ``[i*G, (i+1)*G)`` (file order, wrapping around at the end of the file). Rank
``r`` takes the contiguous shard ``[r*G/W, (r+1)*G/W)`` of it and walks that shard in
``gradient_accumulation_steps`` micro-batches of ``micro_batch_size`` rows. No shuffling: a run
is a pure function of its files and config.
"""
from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import torch

Batch = tuple[torch.Tensor, torch.Tensor]


def load_dataset(path: str | Path) -> Batch:
    """Read the feature and target tensors."""
    blob = torch.load(path, map_location="cpu", weights_only=True)
    x, y = blob["x"].float(), blob["y"].float()
    if x.shape[0] != y.shape[0]:
        raise ValueError(f"{path}: {x.shape[0]} feature rows but {y.shape[0]} target rows")
    return x, y


def micro_batches(x: torch.Tensor, y: torch.Tensor, step: int, micro_batch_size: int, accumulation: int,
                  rank: int, world_size: int) -> Iterator[Batch]:
    """This rank's micro-batches of optimizer step ``step``, in order."""
    n = x.shape[0]
    shard = micro_batch_size * accumulation
    global_batch = shard * world_size
    if global_batch > n:
        raise ValueError(f"a global batch of {global_batch} rows exceeds the {n} rows of the dataset")
    start = step * global_batch + rank * shard
    for m in range(accumulation):
        idx = (torch.arange(micro_batch_size) + start + m * micro_batch_size) % n
        yield x[idx], y[idx]
