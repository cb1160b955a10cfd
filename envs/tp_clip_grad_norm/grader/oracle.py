"""The TP=1 reference, written directly in torch (judge side).

The same model trained with SGD and ``torch.nn.utils.clip_grad_norm_`` from the grader's
own initial weights and data, which the judge regenerates itself (``kit/fixtures.py``).
"""
from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from fixtures import Inputs, State
from scenario import Scenario

LN_EPS = 1e-5


@dataclass(frozen=True)
class Reference:
    """Final full parameters, and each step's loss and pre-clipping global gradient norm."""

    params: State
    losses: list[float]
    grad_norms: list[float]
    clipped_steps: int


def forward(p: State, x: torch.Tensor, num_layers: int) -> torch.Tensor:
    """input_proj -> residual [LayerNorm -> fc1 -> GELU -> fc2] blocks -> final_ln -> head."""
    h = F.linear(x, p["input_proj.weight"], p["input_proj.bias"])
    width = h.shape[-1]
    for i in range(num_layers):
        b = f"blocks.{i}"
        z = F.layer_norm(h, (width,), p[f"{b}.ln.weight"], p[f"{b}.ln.bias"], LN_EPS)
        z = F.gelu(F.linear(z, p[f"{b}.mlp.fc1.weight"], p[f"{b}.mlp.fc1.bias"]))
        h = h + F.linear(z, p[f"{b}.mlp.fc2.weight"], p[f"{b}.mlp.fc2.bias"])
    h = F.layer_norm(h, (width,), p["final_ln.weight"], p["final_ln.bias"], LN_EPS)
    return F.linear(h, p["head.weight"], p["head.bias"])


def _grad_norm_and_clip(params: list[torch.Tensor], max_norm: float) -> float:
    """Global L2 norm of all gradients; clip to ``max_norm`` when clipping is on."""
    if max_norm > 0:
        return float(torch.nn.utils.clip_grad_norm_(params, max_norm))
    return float(torch.nn.utils.get_total_norm([q.grad for q in params if q.grad is not None]))


@torch.no_grad()
def _sgd_step(params: list[torch.Tensor], lr: float) -> None:
    """Plain SGD, ``p -= lr * grad``.

    The arithmetic of ``torch.optim.SGD`` without momentum, written out because that
    optimizer's first step imports torch._dynamo, which takes seconds.
    """
    for q in params:
        assert q.grad is not None
        q.add_(q.grad, alpha=-lr)


def reference_run(sc: Scenario, inputs: Inputs) -> Reference:
    """Train the reference for ``sc.steps`` SGD steps on consecutive batches."""
    p = {k: v.clone().requires_grad_(True) for k, v in inputs.init.items()}
    params = list(p.values())
    losses: list[float] = []
    norms: list[float] = []
    clipped = 0
    for step in range(sc.steps):
        rows = slice(step * sc.batch_size, (step + 1) * sc.batch_size)
        for q in params:
            q.grad = None
        loss = F.mse_loss(forward(p, inputs.x[rows], sc.num_layers), inputs.y[rows])
        loss.backward()  # type: ignore[no-untyped-call]
        norm = _grad_norm_and_clip(params, sc.max_norm)
        clipped += int(sc.max_norm > 0 and norm > sc.max_norm)
        losses.append(float(loss))
        norms.append(norm)
        _sgd_step(params, sc.lr)
    final = {k: v.detach().clone() for k, v in p.items()}
    return Reference(params=final, losses=losses, grad_norms=norms, clipped_steps=clipped)
