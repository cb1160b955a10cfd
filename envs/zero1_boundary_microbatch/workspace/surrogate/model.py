"""The surrogate network: a tanh MLP.

    net.0  Linear(input_dim, hidden_size)   -> tanh
    net.2  Linear(hidden_size, hidden_size) -> tanh     (num_layers - 1 of these)
    ...
    net.K  Linear(hidden_size, output_dim)

Parameter names are ``net.<i>.weight`` / ``net.<i>.bias`` for the linear layers, in that order.
"""
from __future__ import annotations

from typing import Any

import torch
from torch import nn


def build_model(model_cfg: dict[str, Any]) -> nn.Module:
    """A freshly initialised network for the ``model`` config section."""
    d_in, hidden = model_cfg["input_dim"], model_cfg["hidden_size"]
    layers: list[nn.Module] = [nn.Linear(d_in, hidden), nn.Tanh()]
    for _ in range(model_cfg["num_layers"] - 1):
        layers += [nn.Linear(hidden, hidden), nn.Tanh()]
    layers.append(nn.Linear(hidden, model_cfg["output_dim"]))
    return Surrogate(nn.Sequential(*layers))


class Surrogate(nn.Module):
    """Wraps the layer stack so parameter names read ``net.<i>.weight``."""

    def __init__(self, net: nn.Sequential) -> None:
        super().__init__()
        self.net = net

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)


def load_weights(model: nn.Module, path: str) -> None:
    """Load a ``torch.save``d state dict (fp32) into the model; every name must match."""
    state = torch.load(path, map_location="cpu", weights_only=True)
    model.load_state_dict(state, strict=True)
