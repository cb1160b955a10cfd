"""The forecasting network: a two-hidden-layer GELU MLP."""
from __future__ import annotations

from typing import Any

import torch
from torch import nn


class DemandNet(nn.Module):
    """``x -> fc1 -> GELU -> fc2 -> GELU -> head``; parameters ``fc1``, ``fc2``, ``head``."""

    def __init__(self, input_dim: int, hidden_size: int, output_dim: int) -> None:
        super().__init__()
        self.fc1 = nn.Linear(input_dim, hidden_size)
        self.fc2 = nn.Linear(hidden_size, hidden_size)
        self.head = nn.Linear(hidden_size, output_dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Predicted demand for each row of ``x``."""
        h = nn.functional.gelu(self.fc1(x))
        h = nn.functional.gelu(self.fc2(h))
        return self.head(h)


def build_model(model_cfg: dict[str, Any]) -> DemandNet:
    """The model of the ``model`` config section, weights from ``init_checkpoint``."""
    model = DemandNet(model_cfg["input_dim"], model_cfg["hidden_size"], model_cfg["output_dim"])
    state = torch.load(model_cfg["init_checkpoint"], map_location="cpu", weights_only=True)
    model.load_state_dict(state)
    return model
