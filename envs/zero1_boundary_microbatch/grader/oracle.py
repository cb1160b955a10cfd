"""The judge's reference: float64 gradients of the global-batch mean loss.

The README's objective: the gradient an optimizer step applies is that of the mean squared
error over the step's whole global batch (rows ``[s*G, (s+1)*G)``), at the weights the model
computes with (``bf16(master)``), with inputs in bf16. The judge evaluates it in float64 from
its own copy of the data, so the only difference from a healthy run is DeepSpeed's bf16
arithmetic (measured: relative L2 at most 5.1e-3; grader/README.md).
"""
from __future__ import annotations

import torch

from fixtures import Inputs
from scenario import Scenario


def unflatten(sc: Scenario, flat: torch.Tensor) -> list[torch.Tensor]:
    """A flat vector (model order) as the model's parameter tensors."""
    out, offset = [], 0
    for _, shape in sc.shapes:
        n = 1
        for d in shape:
            n *= d
        out.append(flat[offset:offset + n].view(shape))
        offset += n
    return out


def flatten_state(sc: Scenario, state: dict[str, torch.Tensor]) -> torch.Tensor:
    """A state dict (README names) as one flat vector in model order."""
    return torch.cat([state[name].reshape(-1) for name, _ in sc.shapes])


def forward(params: list[torch.Tensor], x: torch.Tensor) -> torch.Tensor:
    """The README's tanh MLP."""
    h = x
    layers = len(params) // 2
    for i in range(layers):
        h = h @ params[2 * i].T + params[2 * i + 1]
        if i < layers - 1:
            h = torch.tanh(h)
    return h


def reference_gradient(sc: Scenario, inputs: Inputs, step: int, master: torch.Tensor) -> torch.Tensor:
    """float64 gradient (flat, model order) of the global-batch mean loss of ``step`` at
    ``bf16(master)`` with bf16 inputs."""
    weights = master.to(torch.bfloat16).to(torch.float64)
    params = [p.clone().requires_grad_(True) for p in unflatten(sc, weights)]
    rows = slice(step * sc.global_batch, (step + 1) * sc.global_batch)
    x = inputs.x[rows].to(torch.bfloat16).to(torch.float64)
    y = inputs.y[rows].to(torch.float64)
    loss = torch.nn.functional.mse_loss(forward(params, x), y)
    grads = torch.autograd.grad(loss, params)
    return torch.cat([g.reshape(-1) for g in grads])
