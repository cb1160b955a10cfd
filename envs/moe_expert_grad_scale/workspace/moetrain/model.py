"""The surrogate model: a dense encoder, one mixture-of-experts block, a dense head.

The MoE block is DeepSpeed's ``deepspeed.moe.layer.MoE`` (top-1 router, no token dropping);
each rank builds only its ``num_experts / expert_parallel_size`` local experts.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch
from deepspeed.moe.layer import MoE
from torch import nn


def expert(hidden_size: int, ffn_hidden_size: int) -> nn.Sequential:
    """One expert: ``Linear(hidden, ffn) -> GELU -> Linear(ffn, hidden)``."""
    return nn.Sequential(nn.Linear(hidden_size, ffn_hidden_size), nn.GELU(),
                         nn.Linear(ffn_hidden_size, hidden_size))


class Surrogate(nn.Module):
    """``y = head(h + moe(h))`` with ``h = tanh(input_proj(x))``."""

    def __init__(self, settings: Mapping[str, Any], expert_parallel_size: int) -> None:
        super().__init__()
        hidden = settings["model.hidden_size"]
        self.input_proj = nn.Linear(settings["model.input_dim"], hidden)
        self.moe = MoE(hidden, expert(hidden, settings["model.ffn_hidden_size"]),
                       num_experts=settings["model.num_experts"], ep_size=expert_parallel_size, k=1,
                       drop_tokens=False)
        self.head = nn.Linear(hidden, settings["model.output_dim"])

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """The prediction and the router's load-balancing loss."""
        h = torch.tanh(self.input_proj(x))
        moe_out, aux_loss, _ = self.moe(h)
        return self.head(h + moe_out), aux_loss

    @property
    def local_experts(self) -> nn.ModuleList:
        """This rank's experts, in local order."""
        return self.moe.deepspeed_moe.experts.deepspeed_experts

    def dense_parameters(self) -> dict[str, nn.Parameter]:
        """Every parameter outside the experts, by name (the router's ``wg`` included)."""
        return {n: p for n, p in self.named_parameters() if ".deepspeed_experts." not in n}


def build_model(settings: Mapping[str, Any], expert_parallel_size: int) -> Surrogate:
    """The model with this rank's experts (weights are loaded from the init checkpoint)."""
    if settings["model.num_experts"] % expert_parallel_size:
        raise ValueError(f"model.num_experts={settings['model.num_experts']} does not split over "
                         f"expert_parallel_size={expert_parallel_size}")
    return Surrogate(settings, expert_parallel_size)
