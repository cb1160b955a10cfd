"""The training table and the per-rank loader."""
from __future__ import annotations

from pathlib import Path

import torch
from torch.utils.data import DataLoader, Dataset, DistributedSampler


class DemandTable(Dataset[tuple[torch.Tensor, torch.Tensor]]):
    """Rows of ``data/train.pt``: ``{"features": [N, input_dim], "target": [N, 1]}`` (float32)."""

    def __init__(self, path: str | Path) -> None:
        blob = torch.load(Path(path), map_location="cpu", weights_only=True)
        self.features = blob["features"].float()
        self.target = blob["target"].float()
        if self.features.shape[0] != self.target.shape[0]:
            raise ValueError(f"{path}: {self.features.shape[0]} feature rows, {self.target.shape[0]} targets")

    def __len__(self) -> int:
        return int(self.features.shape[0])

    def __getitem__(self, index: int) -> tuple[torch.Tensor, torch.Tensor]:
        return self.features[index], self.target[index]


def build_loader(cfg: dict, rank: int, world_size: int) -> tuple[DataLoader, DistributedSampler]:
    """This rank's shard of the table in shuffled micro-batches (a new order every epoch:
    call ``sampler.set_epoch(epoch)`` before iterating)."""
    dcfg = cfg["data"]
    table = DemandTable(dcfg["path"])
    sampler = DistributedSampler(table, num_replicas=world_size, rank=rank, shuffle=True,
                                 seed=int(dcfg["shuffle_seed"]), drop_last=True)
    loader = DataLoader(table, batch_size=int(dcfg["micro_batch_size"]), sampler=sampler, drop_last=True)
    return loader, sampler
