"""The dataset file and the order in which ranks see its rows."""
from __future__ import annotations

from collections.abc import Iterator

import torch

Batch = tuple[torch.Tensor, torch.Tensor, torch.Tensor]


def load_dataset(path: str) -> dict[str, torch.Tensor]:
    """``{"x": [N, d] float, "x_view": [N, d] float, "y": [N] int64}``."""
    data = torch.load(path, map_location="cpu", weights_only=True)
    n = data["x"].shape[0]
    if data["x_view"].shape != data["x"].shape or data["y"].shape != (n,):
        raise ValueError(f"{path}: x, x_view and y must have matching rows")
    return data


def local_batches(data: dict[str, torch.Tensor], global_batch_size: int, rank: int, world: int,
                  steps: int) -> Iterator[Batch]:
    """For step ``i`` the global batch is rows ``[i*G, (i+1)*G)`` (wrapping around the file);
    rank ``r`` takes rows ``r, r+world, r+2*world, ...`` of it, as ``DistributedSampler``
    (no shuffling) would hand them out."""
    if global_batch_size % world:
        raise ValueError(f"global_batch_size={global_batch_size} does not split over {world} ranks")
    n = data["x"].shape[0]
    for step in range(steps):
        rows = (torch.arange(global_batch_size) + step * global_batch_size) % n
        mine = rows[rank::world]
        yield data["x"][mine], data["x_view"][mine], data["y"][mine]
