"""Training data: a ``torch.save``d dict ``{"x": [N, input_dim], "y": [N, output_dim]}``.

Batches are taken in file order (rows ``[i*B, (i+1)*B)`` for step ``i``), wrapping around
at the end of the file. There is no shuffling, so a run is a pure function of its files
and config. Every tensor-parallel rank sees the same batch.
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


def batches(x: torch.Tensor, y: torch.Tensor, batch_size: int, steps: int) -> Iterator[Batch]:
    """Yield ``steps`` consecutive batches, wrapping around the dataset."""
    n = x.shape[0]
    if batch_size > n:
        raise ValueError(f"batch_size={batch_size} exceeds the {n} rows of the dataset")
    for step in range(steps):
        idx = (torch.arange(batch_size) + step * batch_size) % n
        yield x[idx], y[idx]
