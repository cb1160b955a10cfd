"""The specification, replayed in one process in float64 (trusted; imported by the judge only).

Each step: the mean cross-entropy over the step's whole global batch (rows [s*G, (s+1)*G)), its
gradient g, the norm n of g as one vector (Euclidean, or the largest absolute entry for
"inf"), g multiplied by min(1, max_grad_norm / (n + 1e-6)), plain SGD.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from fixtures import initial_state, signals


def forward(p: dict[str, torch.Tensor], x: torch.Tensor) -> torch.Tensor:
    h = torch.relu(F.conv1d(x, p["stem.weight"], p["stem.bias"], padding=2))
    h = torch.relu(F.conv1d(h, p["mix.weight"], p["mix.bias"], padding=1))
    return F.linear(h.mean(dim=-1), p["head.weight"], p["head.bias"])


@dataclass(frozen=True)
class Replay:
    losses: list[float]
    norms: list[float]
    coefs: list[float]
    params: dict[str, torch.Tensor]


def replay(sc) -> Replay:
    params = {k: v.double().clone().requires_grad_(True) for k, v in initial_state(sc).items()}
    data = signals(sc)
    x, y = data["x"].double(), data["y"]
    g_rows = sc.global_rows
    losses, norms, coefs = [], [], []
    for step in range(sc.steps):
        rows = slice(step * g_rows, (step + 1) * g_rows)
        loss = F.cross_entropy(forward(params, x[rows]), y[rows])
        grads = torch.autograd.grad(loss, list(params.values()))
        flat = torch.cat([g.reshape(-1) for g in grads])
        norm = float(flat.abs().max()) if sc.norm_type == "inf" else float(flat.norm())
        coef = min(1.0, sc.max_grad_norm / (norm + 1e-6))
        with torch.no_grad():
            for p, g in zip(params.values(), grads):
                p.sub_(sc.lr * coef * g)
        losses.append(float(loss))
        norms.append(norm)
        coefs.append(coef)
    assert all(math.isfinite(v) for v in losses)
    return Replay(losses, norms, coefs, {k: v.detach().clone() for k, v in params.items()})
