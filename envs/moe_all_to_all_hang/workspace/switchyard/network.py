"""The token model: a dense embedding, one mixture-of-experts feed-forward block, a dense head.

The MoE block subclasses DeepSpeed's ``deepspeed.moe.layer.MoE``: DeepSpeed builds this rank's
experts, the router weight and (through the engine) the expert-parallel group, and its engine
reduces expert gradients over the expert-data-parallel group. The forward pass is ours:
``routing.route`` then the slab exchange of ``exchange.py``.
"""
from __future__ import annotations

from typing import Any

import torch
from deepspeed.moe.layer import MoE
from torch import nn

from switchyard import exchange
from switchyard.routing import route


def make_expert(hidden: int, ffn: int) -> nn.Sequential:
    """One expert: ``Linear(hidden, ffn) -> GELU -> Linear(ffn, hidden)``."""
    return nn.Sequential(nn.Linear(hidden, ffn), nn.GELU(), nn.Linear(ffn, hidden))


class SwitchFFN(MoE):
    """``moe(h)_t = sum over the token's routes of weight * expert(h_t)``."""

    def __init__(self, hidden: int, ffn: int, num_experts: int, ep_size: int, top_k: int, slab_rows: int) -> None:
        if slab_rows < 1:
            raise ValueError(f"moe.slab_rows={slab_rows} must be at least 1")
        super().__init__(hidden, make_expert(hidden, ffn), num_experts=num_experts, ep_size=ep_size, k=top_k,
                         drop_tokens=False, use_rts=False, top2_2nd_expert_sampling=False)
        self.top_k = top_k
        self.slab_rows = slab_rows

    def forward(self, hidden_states: torch.Tensor) -> torch.Tensor:  # type: ignore[override]
        layer = self.deepspeed_moe
        logits = layer.gate.wg(hidden_states.float())
        routes = route(logits, self.top_k)
        buffer = exchange.pack(hidden_states, routes, self.num_experts)
        buffer = exchange.through_experts(buffer, layer.experts, layer.ep_group, self.ep_size, self.slab_rows)
        return exchange.unpack(buffer, routes)


class TokenModel(nn.Module):
    """``prediction = head(h + moe(h))`` with ``h = tanh(embed(x))``, token by token."""

    def __init__(self, opts: dict[str, Any]) -> None:
        super().__init__()
        hidden = opts["model.hidden_size"]
        self.embed = nn.Linear(opts["model.input_dim"], hidden)
        self.moe = SwitchFFN(hidden, opts["model.ffn_hidden_size"], opts["moe.num_experts"],
                             opts["parallel.expert_parallel_size"], opts["moe.top_k"], opts["moe.slab_rows"])
        self.head = nn.Linear(hidden, opts["model.output_dim"])

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.tanh(self.embed(x))
        return self.head(h + self.moe(h))

    def local_experts(self) -> nn.ModuleList:
        """This rank's experts, in local order."""
        return self.moe.deepspeed_moe.experts.deepspeed_experts
