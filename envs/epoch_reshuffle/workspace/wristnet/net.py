"""GestureNet: window summary features -> gesture logits."""

from __future__ import annotations

import torch
from torch import nn


class GestureNet(nn.Module):
    def __init__(self, features: int, hidden: int, classes: int) -> None:
        super().__init__()
        self.fc1 = nn.Linear(features, hidden)
        self.fc2 = nn.Linear(hidden, classes)

    def forward(self, windows: torch.Tensor) -> torch.Tensor:
        return self.fc2(torch.tanh(self.fc1(windows)))
