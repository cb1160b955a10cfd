"""The training table: ``torch.save({"x": [N, input_dim], "y": [N, output_dim]})``.

Step ``i`` trains on rows ``i*B .. i*B + B - 1`` taken modulo ``N``: file order, wrapping
around to the first row at the end of the file, never shuffled. Every tensor-parallel rank
reads the same rows.
"""
from __future__ import annotations

from pathlib import Path

import torch


class Table:
    """Features and targets held in memory."""

    def __init__(self, path: str | Path) -> None:
        blob = torch.load(path, map_location="cpu", weights_only=True)
        self.x, self.y = blob["x"].float(), blob["y"].float()
        if len(self.x) != len(self.y):
            raise ValueError(f"{path}: {len(self.x)} feature rows, {len(self.y)} target rows")

    def __len__(self) -> int:
        return len(self.x)

    def batch(self, step: int, batch_size: int) -> tuple[torch.Tensor, torch.Tensor]:
        """The rows step ``step`` trains on."""
        if batch_size > len(self):
            raise ValueError(f"a batch of {batch_size} rows from a table of {len(self)}")
        rows = torch.arange(step * batch_size, (step + 1) * batch_size) % len(self)
        return self.x[rows], self.y[rows]
