"""The flat weight file: one tensor per name, experts under their global id.

Names: ``embed.weight``, ``embed.bias``, ``router.weight``, ``head.weight``, ``head.bias`` and,
for global expert ``g``, ``experts.<g>.0.weight``, ``experts.<g>.0.bias``,
``experts.<g>.2.weight``, ``experts.<g>.2.bias``. The initial file holds every expert; a rank's
final file holds the dense tensors and the experts that rank trains.
"""
from __future__ import annotations

from pathlib import Path

import torch

from switchyard.network import TokenModel

DENSE = {"embed.weight": "embed.weight", "embed.bias": "embed.bias",
         "router.weight": "moe.deepspeed_moe.gate.wg.weight", "head.weight": "head.weight", "head.bias": "head.bias"}


def held_experts(model: TokenModel, expert_rank: int) -> dict[int, torch.nn.Module]:
    """Global id -> module, for the experts this rank holds (a contiguous slice)."""
    local = model.local_experts()
    first = expert_rank * len(local)
    return {first + i: module for i, module in enumerate(local)}


def load_initial(model: TokenModel, path: str | Path, expert_rank: int) -> None:
    """Copy the dense tensors and this rank's experts from the initial weight file."""
    saved = torch.load(path, map_location="cpu", weights_only=True)
    params = dict(model.named_parameters())
    with torch.no_grad():
        for name, attr in DENSE.items():
            params[attr].copy_(saved[name])
        for gid, module in held_experts(model, expert_rank).items():
            for key, tensor in module.named_parameters():
                tensor.copy_(saved[f"experts.{gid}.{key}"])


def rank_file(model: TokenModel, expert_rank: int) -> dict[str, torch.Tensor]:
    """What this rank saves: the dense tensors and its own experts, on the CPU."""
    params = dict(model.named_parameters())
    out = {name: params[attr].detach().cpu().clone() for name, attr in DENSE.items()}
    for gid, module in held_experts(model, expert_rank).items():
        for key, tensor in module.named_parameters():
            out[f"experts.{gid}.{key}"] = tensor.detach().cpu().clone()
    return out
