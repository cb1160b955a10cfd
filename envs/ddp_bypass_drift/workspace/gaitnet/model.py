"""The activity classifier: a sensor-window encoder and a linear classification head."""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch
from torch import nn


class ActivityNet(nn.Module):
    """``x [B, input_dim]`` -> encoder -> embedding ``[B, embed_dim]`` -> head -> logits.

    The encoder is ``proj_in`` (Linear) -> GELU -> ``proj_out`` (Linear) -> ``norm``
    (LayerNorm, eps 1e-5); the head is one Linear layer over the embedding.
    """

    def __init__(self, input_dim: int, hidden_size: int, embed_dim: int, num_classes: int) -> None:
        super().__init__()
        self.proj_in = nn.Linear(input_dim, hidden_size)
        self.act = nn.GELU()
        self.proj_out = nn.Linear(hidden_size, embed_dim)
        self.norm = nn.LayerNorm(embed_dim, eps=1e-5)
        self.head = nn.Linear(embed_dim, num_classes)

    @classmethod
    def from_settings(cls, settings: Mapping[str, Any]) -> ActivityNet:
        """The model at the sizes of the run's ``model.*`` settings."""
        return cls(settings["model.input_dim"], settings["model.hidden_size"], settings["model.embed_dim"],
                   settings["model.num_classes"])

    def embed(self, x: torch.Tensor) -> torch.Tensor:
        """The window embedding the consistency term compares across views."""
        return self.norm(self.proj_out(self.act(self.proj_in(x))))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Class logits."""
        return self.head(self.embed(x))


def load_checkpoint(model: nn.Module, path: str) -> None:
    """Load a full state dict saved with ``torch.save(model.state_dict())``."""
    model.load_state_dict(torch.load(path, map_location="cpu", weights_only=True))


def unwrap(model: nn.Module) -> nn.Module:
    """The user's model inside a ``DistributedDataParallel`` wrapper (or the model itself)."""
    inner = getattr(model, "module", None)
    return inner if isinstance(inner, nn.Module) else model
