"""The judge's own reference: the README's objective computed in float64, one process.

No DeepSpeed, no process groups: the model of the workspace README (dense encoder, top-1
router, every expert, dense head) written out with plain tensor operations. Step ``i``'s
objective is the mean over the ``W`` ranks' shares of the global batch of
``mse(share) + aux_loss_coef * aux(share)``, where ``aux`` is the router's load-balancing
loss over that share (DeepSpeed's top-1 ``l_aux``). Plain SGD with weight decay (torch's
``SGD``: ``g += wd * p; p -= lr * g``) on every parameter.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F
from fixtures import Inputs
from scenario import Scenario

State = dict[str, torch.Tensor]


@dataclass(frozen=True)
class Reference:
    """Parameters after the last step (float64) and the objective at every step."""

    dense: State
    experts: dict[int, State]
    losses: list[float]


def _flat(init: dict[str, Any]) -> State:
    """``{"dense": {...}, "experts": {id: {...}}}`` -> one float64 leaf per parameter."""
    out = {f"dense/{k}": v.double().clone().requires_grad_(True) for k, v in init["dense"].items()}
    for gid, params in init["experts"].items():
        out.update({f"expert/{int(gid)}/{k}": v.double().clone().requires_grad_(True) for k, v in params.items()})
    return out


def _forward(p: State, sc: Scenario, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Prediction and top-1 ``l_aux`` for one rank's share ``x``."""
    h = torch.tanh(x @ p["dense/input_proj.weight"].T + p["dense/input_proj.bias"])
    gates = F.softmax(h @ p["dense/moe.deepspeed_moe.gate.wg.weight"].T, dim=1)
    choice = torch.argmax(gates, dim=1)
    mask = F.one_hot(choice, sc.num_experts).to(gates.dtype)
    aux = torch.sum(gates.mean(0) * mask.mean(0)) * sc.num_experts
    moe = torch.zeros_like(h)
    for e in range(sc.num_experts):
        rows = (choice == e).nonzero(as_tuple=True)[0]
        if rows.numel() == 0:
            continue
        hidden = F.gelu(h[rows] @ p[f"expert/{e}/0.weight"].T + p[f"expert/{e}/0.bias"])
        out = hidden @ p[f"expert/{e}/2.weight"].T + p[f"expert/{e}/2.bias"]
        moe = moe.index_add(0, rows, gates[rows, e : e + 1] * out)
    return (h + moe) @ p["dense/head.weight"].T + p["dense/head.bias"], aux


def reference_run(sc: Scenario, inputs: Inputs) -> Reference:
    """Train the float64 reference for ``sc.steps`` steps."""
    p = _flat(inputs.init)
    x, y = inputs.x.double(), inputs.y.double()
    per = sc.global_batch // sc.world
    losses: list[float] = []
    for step in range(sc.steps):
        total = torch.zeros((), dtype=torch.float64)
        for rank in range(sc.world):
            rows = (torch.arange(per) + step * sc.global_batch + rank * per) % x.shape[0]
            pred, aux = _forward(p, sc, x[rows])
            total = total + F.mse_loss(pred, y[rows]) + sc.aux_loss_coef * aux
        objective = total / sc.world
        grads = torch.autograd.grad(objective, list(p.values()), allow_unused=True)
        losses.append(objective.item())
        with torch.no_grad():
            for leaf, grad in zip(p.values(), grads, strict=True):
                g = (torch.zeros_like(leaf) if grad is None else grad) + sc.weight_decay * leaf
                leaf.add_(g, alpha=-sc.lr)
    dense = {k.split("/", 1)[1]: v.detach() for k, v in p.items() if k.startswith("dense/")}
    experts: dict[int, State] = {}
    for k, v in p.items():
        if k.startswith("expert/"):
            _, gid, pname = k.split("/", 2)
            experts.setdefault(int(gid), {})[pname] = v.detach()
    return Reference(dense, experts, losses)
