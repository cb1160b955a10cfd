"""The README's objective and its gradient, in float64, at weights a run recorded (judge side).

Step ``k``'s global batch ``B_k`` is rows ``k*G .. k*G + G - 1`` of the dataset, modulo its
length (the file wraps around), and

    L_k = mean over B_k of CE(head(embed(x)), y)  +  w * mean over B_k of ||embed(x) - embed(x_view)||^2

whatever the number of ranks; the update is plain SGD with ``grad L_k``.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from fixtures import Windows
from scenario import Scenario

LN_EPS = 1e-5


def encode(p: dict[str, torch.Tensor], x: torch.Tensor) -> torch.Tensor:
    """proj_in -> exact GELU -> proj_out -> LayerNorm."""
    h = F.gelu(F.linear(x, p["proj_in.weight"], p["proj_in.bias"]))
    z = F.linear(h, p["proj_out.weight"], p["proj_out.bias"])
    return F.layer_norm(z, (z.shape[-1],), p["norm.weight"], p["norm.bias"], LN_EPS)


def objective_gradient(sc: Scenario, data: Windows, weights: dict[str, torch.Tensor],
                       step: int) -> dict[str, torch.Tensor]:
    """``grad L_k`` at ``weights`` (float64, by parameter name)."""
    p = {k: v.detach().to(torch.float64).requires_grad_(True) for k, v in weights.items()}
    rows = (torch.arange(sc.global_batch_size) + step * sc.global_batch_size) % len(data.y)
    z = encode(p, data.x[rows].double())
    loss = F.cross_entropy(F.linear(z, p["head.weight"], p["head.bias"]), data.y[rows])
    if sc.consistency_weight > 0:
        loss = loss + sc.consistency_weight * (z - encode(p, data.x_view[rows].double())).pow(2).sum(dim=-1).mean()
    return dict(zip(p, torch.autograd.grad(loss, list(p.values())), strict=True))
