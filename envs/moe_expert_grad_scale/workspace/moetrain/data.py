"""Dataset file and batch order."""
from __future__ import annotations

from pathlib import Path

import torch


def load_dataset(path: str | Path) -> tuple[torch.Tensor, torch.Tensor]:
    """``(x, y)`` from ``torch.save({"x": [N, input_dim], "y": [N, output_dim]})``."""
    data = torch.load(path, map_location="cpu", weights_only=True)
    return data["x"].float(), data["y"].float()


def local_batch(x: torch.Tensor, y: torch.Tensor, step: int, global_batch: int, rank: int,
                world: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Rank ``rank``'s share of step ``step``'s global batch.

    The global batch of step ``i`` is rows ``[i*G, (i+1)*G)`` (file order, wrapping around);
    rank ``r`` of ``W`` takes its ``r``-th contiguous ``G/W`` rows.
    """
    if global_batch % world:
        raise ValueError(f"global_batch_size={global_batch} does not split over {world} ranks")
    per = global_batch // world
    rows = (torch.arange(per) + step * global_batch + rank * per) % x.shape[0]
    return x[rows], y[rows]
