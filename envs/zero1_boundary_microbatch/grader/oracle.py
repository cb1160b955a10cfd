"""The README's update in float64 (judge side): the gradient of the mean squared error over step
``k``'s whole global batch (rows ``k*G ..`` modulo the file's length) at the weights the model
computes with (``bf16(master)`` and bf16 inputs, or the fp32 masters), clipped by DeepSpeed's
rule (scaled by ``c / (norm + 1e-6)`` when that is below 1) when ``gradient_clipping`` is on.
"""
from __future__ import annotations

import math

import torch
from fixtures import Inputs
from scenario import Scenario

#: DeepSpeed's clipping adds this to the global norm before dividing.
CLIP_EPS = 1e-6


def flatten_state(sc: Scenario, state: dict[str, torch.Tensor]) -> torch.Tensor:
    """A state dict (README names) as one vector in the model's order."""
    return torch.cat([state[name].reshape(-1) for name, _ in sc.shapes])


def _layers(sc: Scenario, flat_weights: torch.Tensor) -> list[torch.Tensor]:
    out, offset = [], 0
    for _, shape in sc.shapes:
        size = math.prod(shape)
        out.append(flat_weights[offset : offset + size].view(shape).clone().requires_grad_(True))
        offset += size
    return out


def computed_weights(sc: Scenario, master: torch.Tensor) -> torch.Tensor:
    """The weights the model computes with, given its fp32 masters."""
    return master.to(torch.bfloat16).to(torch.float32) if sc.bf16 else master


def step_gradient(sc: Scenario, inputs: Inputs, step: int, master: torch.Tensor) -> torch.Tensor:
    """The gradient step ``step`` must apply, at fp32 masters ``master`` (flat, model order)."""
    params = _layers(sc, computed_weights(sc, master).to(torch.float64))
    rows = (torch.arange(sc.global_batch) + step * sc.global_batch) % len(inputs.x)
    x = inputs.x[rows]
    h = (x.to(torch.bfloat16) if sc.bf16 else x).to(torch.float64)
    for index in range(0, len(params), 2):
        h = h @ params[index].T + params[index + 1]
        if index + 2 < len(params):
            h = torch.tanh(h)
    loss = torch.nn.functional.mse_loss(h, inputs.y[rows].to(torch.float64))
    grad = torch.cat([g.reshape(-1) for g in torch.autograd.grad(loss, params)])
    if sc.gradient_clipping > 0:
        scale = sc.gradient_clipping / (float(grad.norm()) + CLIP_EPS)
        grad = grad * min(1.0, scale)
    return grad
