"""Moving routed tokens to the experts and the results back.

``pack`` lays the routes of this rank's tokens out as a dispatch buffer ``[num_experts, width,
hidden]`` (expert ``e``'s routes in rows ``0 .. load[e]-1`` of its block, zeros after);
``unpack`` gathers every route's result back and sums each token's routes with their weights.

``through_experts`` runs a dispatch buffer through the experts. Without expert parallelism this
rank holds every expert and the buffer stays here. With it, the buffer travels through
DeepSpeed's all-to-all over the expert-parallel group in **slabs** of ``slab_rows`` rows of every
expert's block (the last one zero-padded), so every exchange moves a buffer of one fixed shape
``[num_experts, slab_rows, hidden]`` however wide the dispatch is: each slab goes out, through
this rank's experts, and back before the next one, which bounds the memory the exchange holds.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from deepspeed.moe.experts import Experts
from deepspeed.moe.sharded_moe import _AllToAll

from switchyard.routing import Routes


def _rows(routes: Routes) -> torch.Tensor:
    """Each route's row in the flattened ``[num_experts * width, hidden]`` buffer, ``[k * S]``."""
    return (routes.experts * routes.width + routes.slots).reshape(-1)


def pack(tokens: torch.Tensor, routes: Routes, num_experts: int) -> torch.Tensor:
    """``[S, hidden]`` tokens -> the dispatch buffer ``[num_experts, width, hidden]``."""
    hidden = tokens.shape[-1]
    flat = tokens.new_zeros(num_experts * routes.width, hidden)
    flat = flat.index_add(0, _rows(routes), tokens.repeat(routes.top_k, 1))
    return flat.view(num_experts, routes.width, hidden)


def unpack(buffer: torch.Tensor, routes: Routes) -> torch.Tensor:
    """The experts' buffer ``[num_experts, width, hidden]`` -> ``[S, hidden]``: each token's routes,
    weighted and summed."""
    hidden = buffer.shape[-1]
    picked = buffer.reshape(-1, hidden).index_select(0, _rows(routes))
    picked = picked.view(routes.top_k, -1, hidden)
    return (picked * routes.weights.unsqueeze(-1).to(picked.dtype)).sum(0)


def through_experts(buffer: torch.Tensor, experts: Experts, group, ep_size: int, slab_rows: int) -> torch.Tensor:
    """Every row of the dispatch buffer through its expert, wherever that expert lives."""
    num_experts, width, hidden = buffer.shape
    if ep_size == 1:
        return experts(buffer.unsqueeze(0)).squeeze(0)
    local = num_experts // ep_size
    slabs = -(-width // slab_rows)
    padded = F.pad(buffer, (0, 0, 0, slabs * slab_rows - width))
    results = []
    for index in range(slabs):
        slab = padded[:, index * slab_rows:(index + 1) * slab_rows].contiguous()
        # after the exchange: [source rank, local expert, slab row, hidden]
        arrived = _AllToAll.apply(group, slab).view(ep_size, local, slab_rows, hidden)
        done = experts(arrived).reshape(num_experts, slab_rows, hidden)
        results.append(_AllToAll.apply(group, done.contiguous()))
    if not results:
        return buffer
    return torch.cat(results, dim=1)[:, :width]
