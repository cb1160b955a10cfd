"""The README's training at one rank, in plain torch (judge side).

The full model from the scenario's starting weights, step ``i`` on the rows
``Scenario.batch_rows(i)`` (file order, wrapping around), mean squared error, and
``torch.nn.utils.clip_grad_norm_`` over every parameter when clipping is on (the norm of the
whole model's gradient, as the README defines it), then plain SGD.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from compare import sgd_step  # the harness library
from fixtures import Inputs, State
from scenario import Scenario


@dataclass(frozen=True)
class Reference:
    """Final full parameters; each step's loss and gradient norm before clipping."""

    params: State
    losses: list[float]
    norms: list[float]

    def clipped(self, max_norm: float) -> int:
        return sum(max_norm > 0 and norm > max_norm for norm in self.norms)


def predict(p: State, x: torch.Tensor, num_layers: int) -> torch.Tensor:
    """input_proj, residual blocks ``h + fc2(GELU(fc1(LayerNorm(h))))``, final_ln, head."""
    h = F.linear(x, p["input_proj.weight"], p["input_proj.bias"])
    width = (h.shape[-1],)
    for i in range(num_layers):
        z = F.layer_norm(h, width, p[f"blocks.{i}.ln.weight"], p[f"blocks.{i}.ln.bias"], 1e-5)
        z = F.gelu(F.linear(z, p[f"blocks.{i}.mlp.fc1.weight"], p[f"blocks.{i}.mlp.fc1.bias"]))
        h = h + F.linear(z, p[f"blocks.{i}.mlp.fc2.weight"], p[f"blocks.{i}.mlp.fc2.bias"])
    h = F.layer_norm(h, width, p["final_ln.weight"], p["final_ln.bias"], 1e-5)
    return F.linear(h, p["head.weight"], p["head.bias"])


def reference_run(sc: Scenario, inputs: Inputs) -> Reference:
    """``sc.steps`` steps of the README's training."""
    p = {name: value.clone().requires_grad_(True) for name, value in inputs.init.items()}
    params = list(p.values())
    unused: list[torch.Tensor | None] = [None] * len(params)
    losses, norms = [], []
    for step in range(sc.steps):
        rows = torch.tensor(sc.batch_rows(step))
        for q in params:
            q.grad = None
        loss = F.mse_loss(predict(p, inputs.x[rows], sc.num_layers), inputs.y[rows])
        loss.backward()  # type: ignore[no-untyped-call]
        if sc.clipping:
            norm = torch.nn.utils.clip_grad_norm_(params, sc.max_norm)
        else:
            norm = torch.nn.utils.get_total_norm([q.grad for q in params if q.grad is not None])
        losses.append(float(loss.detach()))
        norms.append(float(norm))
        sgd_step(params, unused, sc.lr)
    return Reference({name: value.detach().clone() for name, value in p.items()}, losses, norms)
