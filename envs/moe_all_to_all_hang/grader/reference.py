"""The README's training, written directly in float64 on one process (the judge's reference).

Every step: each rank's share of the step's documents, every token through its ``top_k`` most
probable experts with the README's weights (nothing dropped, no capacity), rank losses averaged,
one SGD step. Nothing here knows about ranks beyond which tokens each rank's loss covers.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from scenario import Scenario


@dataclass(frozen=True)
class Reference:
    losses: list[float]
    tokens: list[int]
    weights: dict[str, torch.Tensor]
    max_update: float
    #: per step, per rank: the routes each expert receives (how wide each rank's dispatch is)
    loads: list[list[list[int]]]


def routes(h: torch.Tensor, router: torch.Tensor, top_k: int) -> tuple[torch.Tensor, torch.Tensor]:
    """``[k, S]`` experts and weights: the most probable expert with its probability (top-1), or the
    two most probable with their probabilities renormalised over the pair (top-2)."""
    p = torch.softmax(h @ router.T, dim=1)
    top, experts = p.topk(top_k, dim=1)
    weights = top if top_k == 1 else top / top.sum(dim=1, keepdim=True)
    return experts.T, weights.T


def predict(w: dict[str, torch.Tensor], x: torch.Tensor, sc: Scenario) -> tuple[torch.Tensor, list[int]]:
    h = torch.tanh(x @ w["embed.weight"].T + w["embed.bias"])
    experts, weights = routes(h, w["router.weight"], sc.top_k)
    moe = torch.zeros_like(h)
    for g in range(sc.num_experts):
        chosen = experts == g  # [k, S]
        if not bool(chosen.any()):
            continue
        inner = F.gelu(h @ w[f"experts.{g}.0.weight"].T + w[f"experts.{g}.0.bias"])
        out = inner @ w[f"experts.{g}.2.weight"].T + w[f"experts.{g}.2.bias"]
        moe = moe + (weights * chosen).sum(0).unsqueeze(1) * out
    load = torch.bincount(experts.reshape(-1), minlength=sc.num_experts).tolist()
    return (h + moe) @ w["head.weight"].T + w["head.bias"], load


def share(sc: Scenario, step: int, rank: int, starts: list[int]) -> torch.Tensor:
    """Token rows of ``rank``'s documents at ``step`` (README, step 1)."""
    lengths = sc.lengths
    per_rank = sc.docs_per_step // sc.world
    first = step * sc.docs_per_step + rank * per_rank
    docs = [(first + j) % len(lengths) for j in range(per_rank)]
    return torch.cat([torch.arange(starts[d], starts[d] + lengths[d]) for d in docs])


def train(sc: Scenario, data: dict[str, torch.Tensor], init: dict[str, torch.Tensor]) -> Reference:
    w = {k: v.to(torch.float64).clone().requires_grad_(True) for k, v in init.items()}
    x, y = data["x"].to(torch.float64), data["y"].to(torch.float64)
    starts = [0]
    for n in sc.lengths[:-1]:
        starts.append(starts[-1] + n)
    losses, tokens, loads = [], [], []
    for step in range(sc.steps):
        rows = [share(sc, step, rank, starts) for rank in range(sc.world)]
        outputs = [predict(w, x[r], sc) for r in rows]
        objective = sum(F.mse_loss(pred, y[r]) for (pred, _), r in zip(outputs, rows, strict=True)) / sc.world
        loads.append([load for _, load in outputs])
        grads = torch.autograd.grad(objective, list(w.values()))
        with torch.no_grad():
            for param, grad in zip(w.values(), grads, strict=True):
                param -= sc.lr * grad
        losses.append(float(objective))
        tokens.append(sum(len(r) for r in rows))
    final = {k: v.detach() for k, v in w.items()}
    moved = max(float((final[k] - init[k].to(torch.float64)).abs().max()) for k in final)
    return Reference(losses, tokens, final, moved, loads)
