"""Two independent towers, one per task, concatenated into a [rows, 2] prediction."""
from __future__ import annotations

import torch
from torch import nn


class Tower(nn.Module):
    def __init__(self, features: int, hidden: int) -> None:
        super().__init__()
        self.inp = nn.Linear(features, hidden)
        self.out = nn.Linear(hidden, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.out(torch.relu(self.inp(x)))


class TwinHead(nn.Module):
    """`demand` reads the first feature block, `returns` the second."""

    def __init__(self, features: int, hidden: int) -> None:
        super().__init__()
        self.demand = Tower(features, hidden)
        self.returns = Tower(features, hidden)

    def forward(self, x_demand: torch.Tensor, x_returns: torch.Tensor) -> torch.Tensor:
        return torch.cat([self.demand(x_demand), self.returns(x_returns)], dim=1)
