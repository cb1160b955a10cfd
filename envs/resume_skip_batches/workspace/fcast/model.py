"""The forecaster: a two-layer MLP regressor over a vector of input features."""
from __future__ import annotations

from pathlib import Path

import torch
from torch import nn


class Forecaster(nn.Module):
    """``input_dim`` features -> ``hidden_size`` tanh units -> one predicted value."""

    def __init__(self, input_dim: int, hidden_size: int) -> None:
        super().__init__()
        self.fc1 = nn.Linear(input_dim, hidden_size)
        self.fc2 = nn.Linear(hidden_size, 1)

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        return self.fc2(torch.tanh(self.fc1(features)))


def build_model(cfg: dict) -> Forecaster:
    """The model of ``cfg["model"]``, warm-started from ``init_checkpoint`` when one is set."""
    mcfg = cfg["model"]
    model = Forecaster(int(mcfg["input_dim"]), int(mcfg["hidden_size"]))
    init = mcfg.get("init_checkpoint")
    if init:
        model.load_state_dict(torch.load(Path(init), map_location="cpu", weights_only=True))
    return model
