"""Per-rank batches of the window table.

``ShardBatchSampler`` is handed to the ``DataLoader`` as its ``batch_sampler``: it owns the rank's
shard of the table (a ``DistributedSampler``) and cuts it into the rank's batches, so that
``len(loader)`` is the number of optimizer steps of one epoch on every rank, whatever the table
size and batch size.
"""

from __future__ import annotations

from collections.abc import Iterator

import torch
from torch.utils.data import DataLoader, DistributedSampler, Sampler, TensorDataset


class ShardBatchSampler(Sampler[list[int]]):
    """Batches of ``batch_size`` indices from this rank's shard, in the shard's order."""

    def __init__(self, rows: int, batch_size: int, *, num_replicas: int, rank: int, seed: int,
                 drop_last: bool) -> None:
        self.shard = DistributedSampler(range(rows), num_replicas=num_replicas, rank=rank, shuffle=True,
                                        seed=seed, drop_last=drop_last)
        self.batch_size = batch_size
        self.drop_last = drop_last

    def __iter__(self) -> Iterator[list[int]]:
        batch: list[int] = []
        for index in self.shard:
            batch.append(index)
            if len(batch) == self.batch_size:
                yield batch
                batch = []
        if batch and not self.drop_last:
            yield batch

    def __len__(self) -> int:
        whole, rest = divmod(len(self.shard), self.batch_size)
        return whole + (1 if rest and not self.drop_last else 0)


def make_loader(table: dict[str, torch.Tensor], batch_size: int, *, num_replicas: int, rank: int,
                seed: int, drop_last: bool) -> DataLoader:
    dataset = TensorDataset(table["windows"], table["gesture"])
    batches = ShardBatchSampler(len(dataset), batch_size, num_replicas=num_replicas, rank=rank, seed=seed,
                                drop_last=drop_last)
    return DataLoader(dataset, batch_sampler=batches)
