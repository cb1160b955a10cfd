"""Model files in the consolidated layout: ``{"dense": {name: tensor}, "experts": {id: {name: tensor}}}``.

``dense`` holds every parameter outside the experts under its ``Surrogate`` name; ``experts``
maps a global expert id to that expert's parameters (``0.weight``, ``0.bias``, ``2.weight``,
``2.bias``). Expert-parallel rank ``p`` holds global experts ``p*L … p*L+L-1`` with
``L = num_experts / expert_parallel_size`` (local expert ``j`` is global ``p*L + j``).
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import torch

from moetrain.model import Surrogate


def global_ids(model: Surrogate, ep_rank: int) -> list[int]:
    """Global ids of this rank's local experts, in local order."""
    local = len(model.local_experts)
    return [ep_rank * local + j for j in range(local)]


@torch.no_grad()
def load_consolidated(model: Surrogate, path: str | Path, ep_rank: int) -> None:
    """Copy the dense parameters and this rank's experts from a consolidated file."""
    state: dict[str, Any] = torch.load(path, map_location="cpu", weights_only=True)
    for name, param in model.dense_parameters().items():
        param.copy_(state["dense"][name])
    for gid, module in zip(global_ids(model, ep_rank), model.local_experts):
        for name, param in module.named_parameters():
            param.copy_(state["experts"][gid][name])


@torch.no_grad()
def rank_state(model: Surrogate, ep_rank: int) -> dict[str, Any]:
    """This rank's parameters in the consolidated layout (its experts only), on CPU."""
    return {
        "dense": {n: p.detach().float().cpu().clone() for n, p in model.dense_parameters().items()},
        "experts": {gid: {n: p.detach().float().cpu().clone() for n, p in module.named_parameters()}
                    for gid, module in zip(global_ids(model, ep_rank), model.local_experts)},
    }
