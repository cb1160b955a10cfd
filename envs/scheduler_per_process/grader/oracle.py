"""The specification's reference run, written directly in torch (judge side).

One process, float64, the whole global batch of each update at once: update ``k`` uses rows
``[k·R, (k+1)·R)`` (``R`` = processes × per-device batch × accumulation) of the grader's own
data, mean-squared-error loss over all of them, SGD with momentum at the learning rate of the
schedule stepped once per update: ``transformers.get_scheduler`` with the scenario's name,
warmup and kwargs over ``total_updates``, which is what the README specifies.
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from fixtures import Inputs, State
from scenario import Scenario
from transformers import get_scheduler


@dataclass(frozen=True)
class Reference:
    """Final parameters, and each update's learning rate and pre-update loss."""

    params: State
    lrs: list[float]
    losses: list[float]


def forward(p: State, x: torch.Tensor) -> torch.Tensor:
    """fc1 -> GELU -> fc2 -> GELU -> head (exact erf GELU)."""
    h = F.gelu(F.linear(x, p["fc1.weight"], p["fc1.bias"]))
    h = F.gelu(F.linear(h, p["fc2.weight"], p["fc2.bias"]))
    return F.linear(h, p["head.weight"], p["head.bias"])


def schedule(sc: Scenario) -> list[float]:
    """The learning rate of each update: the named schedule stepped once per update."""
    holder = torch.nn.Parameter(torch.zeros(1))
    # only a carrier for param_groups' lr: never stepped, so torch._dynamo is never imported
    optimizer = torch.optim.SGD([holder], lr=sc.lr)
    sched = get_scheduler(sc.lr_scheduler_type, optimizer, num_warmup_steps=sc.warmup_steps,
                          num_training_steps=sc.total_updates,
                          scheduler_specific_kwargs=dict(sc.scheduler_kwargs))
    lrs = []
    with warnings.catch_warnings():  # "scheduler.step() before optimizer.step()": intended here
        warnings.simplefilter("ignore", UserWarning)
        for _ in range(sc.total_updates):
            lrs.append(float(optimizer.param_groups[0]["lr"]))
            sched.step()
    return lrs


@torch.no_grad()
def _momentum_step(params: list[torch.Tensor], bufs: list[torch.Tensor | None], lr: float,
                   momentum: float) -> None:
    """``torch.optim.SGD(momentum=m)`` (no dampening, not Nesterov) written out: its first
    ``step`` imports torch._dynamo, which takes seconds."""
    for i, q in enumerate(params):
        assert q.grad is not None
        buf = bufs[i]
        if buf is None:
            buf = q.grad.detach().clone()
        else:
            buf.mul_(momentum).add_(q.grad)
        bufs[i] = buf
        q.add_(buf, alpha=-lr)


def reference_run(sc: Scenario, inputs: Inputs) -> Reference:
    """Train the reference for ``sc.total_updates`` updates in float64."""
    p = {k: v.to(torch.float64).clone().requires_grad_(True) for k, v in inputs.init.items()}
    x, y = inputs.x.to(torch.float64), inputs.y.to(torch.float64)
    params = list(p.values())
    bufs: list[torch.Tensor | None] = [None] * len(params)
    lrs = schedule(sc)
    losses: list[float] = []
    per = sc.rows_per_update
    for update in range(sc.total_updates):
        k = update % sc.updates_per_epoch
        rows = slice(k * per, (k + 1) * per)
        for q in params:
            q.grad = None
        loss = F.mse_loss(forward(p, x[rows]), y[rows])
        loss.backward()  # type: ignore[no-untyped-call]
        losses.append(float(loss.detach()))
        _momentum_step(params, bufs, lrs[update], sc.momentum)
    final = {k: v.detach().clone() for k, v in p.items()}
    return Reference(params=final, lrs=lrs, losses=losses)
