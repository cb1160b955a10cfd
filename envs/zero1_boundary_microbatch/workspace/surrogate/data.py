"""Which rows of the dataset file each rank trains on, step by step.

The file is ``torch.save({"x": [N, input_dim], "y": [N, output_dim]})``. A step consumes one
global batch of ``G = micro x accumulation x world`` rows, in file order and wrapping around
the end of the file: step ``i`` reads rows ``i*G .. i*G + G - 1`` (modulo ``N``). Rank ``r``
owns the ``r``-th contiguous slice of ``micro x accumulation`` of them and trains on it as
``accumulation`` micro-batches of ``micro`` rows, first to last. Nothing is shuffled.
"""
from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import torch


def read_table(path: str | Path) -> tuple[torch.Tensor, torch.Tensor]:
    """Features and targets of the dataset file, as float32."""
    table = torch.load(path, map_location="cpu", weights_only=True)
    features, targets = table["x"].float(), table["y"].float()
    if len(features) != len(targets):
        raise ValueError(f"{path}: {len(features)} feature rows for {len(targets)} target rows")
    return features, targets


@dataclass(frozen=True)
class RankSlice:
    """One rank's view of the global batches."""

    features: torch.Tensor
    targets: torch.Tensor
    micro: int
    accumulation: int
    rank: int
    world: int

    def __post_init__(self) -> None:
        need = self.micro * self.accumulation * self.world
        if need > len(self.features):
            raise ValueError(f"a global batch of {need} rows is larger than the {len(self.features)}-row dataset")

    def micro_batches(self, step: int) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
        """This rank's micro-batches of optimizer step ``step``, in order."""
        own = self.micro * self.accumulation
        first = (step * self.world + self.rank) * own
        for k in range(self.accumulation):
            rows = (first + k * self.micro + torch.arange(self.micro)) % len(self.features)
            yield self.features[rows], self.targets[rows]
