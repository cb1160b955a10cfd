"""The surrogate network: a tanh MLP.

    net.0  Linear(input_dim, hidden_size)   -> tanh
    net.2  Linear(hidden_size, hidden_size) -> tanh     (num_layers - 1 of these)
    ...
    net.K  Linear(hidden_size, output_dim)

Parameter names are ``net.<i>.weight`` / ``net.<i>.bias`` for the linear layers, in that order.
"""
from __future__ import annotations

import torch
from torch import nn

from surrogate.options import ModelShape


class Surrogate(nn.Module):
    """The layer stack, kept as ``net`` so parameter names read ``net.<i>.weight``."""

    def __init__(self, shape: ModelShape) -> None:
        super().__init__()
        widths = [shape.input_dim, *[shape.hidden_size] * shape.num_layers]
        layers: list[nn.Module] = []
        for fan_in, fan_out in zip(widths, widths[1:] + [shape.output_dim]):
            layers.append(nn.Linear(fan_in, fan_out))
            if len(layers) < 2 * len(widths) - 1:
                layers.append(nn.Tanh())
        self.net = nn.Sequential(*layers)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)


def load_weights(model: nn.Module, path: str) -> None:
    """Load a ``torch.save``d fp32 state dict; every name must match."""
    model.load_state_dict(torch.load(path, map_location="cpu", weights_only=True), strict=True)
