"""GearNet: two 1-D convolutions over the sensor window, time-averaged, then a linear head."""
from __future__ import annotations

import torch
from torch import nn


class GearNet(nn.Module):
    def __init__(self, channels: int, width: int, classes: int) -> None:
        super().__init__()
        self.stem = nn.Conv1d(channels, width, kernel_size=5, padding=2)
        self.mix = nn.Conv1d(width, width, kernel_size=3, padding=1)
        self.head = nn.Linear(width, classes)

    def forward(self, window: torch.Tensor) -> torch.Tensor:
        features = torch.relu(self.mix(torch.relu(self.stem(window))))
        return self.head(features.mean(dim=-1))
