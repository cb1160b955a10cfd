"""Token rows from a JSONL file, batched per rank.

Each line is ``{"tokens": [...]}`` with ``seq_len + 1`` ids: the model reads the first
``seq_len`` and predicts the last ``seq_len``. Every epoch the rows are shuffled with a
generator of the corpus's own (seeded ``train.seed + epoch``); each step takes the next
``batch_size x world`` rows of the order and rank ``r`` reads the ``r``-th ``batch_size`` of
them. A short tail of an epoch is dropped.
"""
from __future__ import annotations

import json
from pathlib import Path

import torch


class Batches:
    def __init__(self, path: str, seq_len: int, batch_size: int, rank: int, world: int, seed: int) -> None:
        rows = [json.loads(line)["tokens"] for line in Path(path).read_text().splitlines() if line.strip()]
        self.rows = torch.tensor(rows, dtype=torch.long)
        if self.rows.dim() != 2 or self.rows.shape[1] != seq_len + 1:
            raise ValueError(f"{path}: rows must hold seq_len + 1 = {seq_len + 1} tokens")
        self.batch_size, self.rank, self.world, self.seed = batch_size, rank, world, seed
        self.per_step = batch_size * world
        if len(self.rows) < self.per_step:
            raise ValueError(f"{path}: {len(self.rows)} rows, one step needs {self.per_step}")
        self.epoch = -1
        self.queue: list[int] = []

    def next(self) -> torch.Tensor:
        """This rank's rows of the next step, ``[batch_size, seq_len + 1]``."""
        if len(self.queue) < self.per_step:
            self.epoch += 1
            order = torch.Generator().manual_seed(self.seed + self.epoch)
            self.queue = torch.randperm(len(self.rows), generator=order).tolist()
        step, self.queue = self.queue[:self.per_step], self.queue[self.per_step:]
        mine = step[self.rank * self.batch_size:(self.rank + 1) * self.batch_size]
        return self.rows[mine]
