"""The specified gradient, written directly in torch (judge side).

The README's objective for optimizer step ``k``: with global batch ``G`` = rows
``[k*G, (k+1)*G)`` of the dataset (wrapping around),

    L_k = mean cross-entropy of the logits over G  +  w * mean over G of ||embed(x) - embed(x_view)||^2

and the update is plain SGD with the gradient of ``L_k`` with respect to every parameter:
whatever the number of ranks. Computed here in float64 at the weights a run recorded.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from fixtures import Inputs, State
from scenario import Scenario

LN_EPS = 1e-5


def embed(p: State, x: torch.Tensor) -> torch.Tensor:
    """proj_in -> exact GELU -> proj_out -> LayerNorm."""
    h = F.gelu(F.linear(x, p["proj_in.weight"], p["proj_in.bias"]))
    z = F.linear(h, p["proj_out.weight"], p["proj_out.bias"])
    return F.layer_norm(z, (z.shape[-1],), p["norm.weight"], p["norm.bias"], LN_EPS)


def global_rows(sc: Scenario, inputs: Inputs, step: int) -> torch.Tensor:
    """Row indices of step ``step``'s global batch."""
    return (torch.arange(sc.global_batch_size) + step * sc.global_batch_size) % inputs.x.shape[0]


def spec_gradient(sc: Scenario, inputs: Inputs, weights: State, step: int) -> tuple[float, State]:
    """The objective and its float64 gradient at ``weights`` for step ``step``."""
    p = {k: v.detach().to(torch.float64).requires_grad_(True) for k, v in weights.items()}
    rows = global_rows(sc, inputs, step)
    x, y = inputs.x[rows].double(), inputs.y[rows]
    z = embed(p, x)
    loss = F.cross_entropy(F.linear(z, p["head.weight"], p["head.bias"]), y)
    if sc.consistency_weight > 0:
        z_view = embed(p, inputs.x_view[rows].double())
        loss = loss + sc.consistency_weight * (z - z_view).pow(2).sum(dim=-1).mean()
    grads = torch.autograd.grad(loss, list(p.values()))
    return float(loss), dict(zip(p, grads, strict=True))
