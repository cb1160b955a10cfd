"""The router: which experts each token goes to, where it sits in the dispatch buffer, and
with which weight.

The gating itself is DeepSpeed's (``deepspeed.moe.sharded_moe.top1gating`` / ``top2gating``),
in its sparse form (one expert, slot and weight per route) and with ``drop_tokens=False``: the
dispatch buffer is made wide enough for the fullest expert, so no route is ever cut. Routing is a
pure function of the router logits (no noise, no random token selection), which is what lets us
check a routing decision on one process.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch
from deepspeed.moe.sharded_moe import top1gating, top2gating


@dataclass(frozen=True)
class Routes:
    """The routes of ``S`` tokens, ``k`` per token (``[k, S]`` each)."""

    experts: torch.Tensor  # global expert id of each route
    slots: torch.Tensor  # row of the route inside its expert's block of the dispatch buffer
    weights: torch.Tensor  # combine weight of the route
    width: int  # rows per expert in the dispatch buffer
    load: torch.Tensor  # [num_experts] routes each expert received

    @property
    def top_k(self) -> int:
        return int(self.experts.shape[0])


def route(logits: torch.Tensor, top_k: int) -> Routes:
    """Route ``S`` tokens from their router logits ``[S, num_experts]``.

    ``top_k = 1``: the most probable expert, weighted by its softmax probability.
    ``top_k = 2``: the two most probable experts, weights renormalised over the pair.
    """
    if top_k == 1:
        _, width, _, experts, slots, weights, load = top1gating(
            logits, capacity_factor=1.0, min_capacity=0, drop_tokens=False, use_rts=False, sparse_routes=True)
    elif top_k == 2:
        _, width, _, experts, slots, weights, load = top2gating(
            logits, capacity_factor=1.0, min_capacity=0, drop_tokens=False, top2_2nd_expert_sampling=False,
            sparse_routes=True)
    else:
        raise ValueError(f"moe.top_k={top_k}: the router supports top-1 and top-2")
    return Routes(experts.long(), slots.long(), weights, int(width), load)
