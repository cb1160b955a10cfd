"""The specification's reference run, written directly in torch (judge side).

One process, float64, the whole global batch of each update at once: update ``k`` uses rows
``sc.window(k)`` of the grader's own data, mean-squared-error loss over them, scaled by
``k_batches / A`` for an epoch's short last update (Accelerate divides every micro-batch's
loss by ``A``, as the README says), SGD with momentum at the learning rate of the schedule
stepped once per update: ``transformers.get_scheduler`` with the scenario's name, warmup and
kwargs over ``U·E`` updates, ``U = ceil(batches per process / A)``.
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from compare import sgd_step  # the harness library
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
    optimizer = torch.optim.SGD([holder], lr=sc.lr)  # a carrier for param_groups' lr, never stepped
    sched = get_scheduler(sc.lr_scheduler_type, optimizer, num_warmup_steps=sc.warmup_steps,
                          num_training_steps=sc.total_updates, scheduler_specific_kwargs=dict(sc.scheduler_kwargs))
    lrs = []
    with warnings.catch_warnings():  # "scheduler.step() before optimizer.step()": intended here
        warnings.simplefilter("ignore", UserWarning)
        for _ in range(sc.total_updates):
            lrs.append(float(optimizer.param_groups[0]["lr"]))
            sched.step()
    return lrs


def reference_run(sc: Scenario, inputs: Inputs) -> Reference:
    """Train the reference for ``sc.total_updates`` updates in float64."""
    p = {k: v.to(torch.float64).clone().requires_grad_(True) for k, v in inputs.init.items()}
    x, y = inputs.x.to(torch.float64), inputs.y.to(torch.float64)
    params = list(p.values())
    buffers: list[torch.Tensor | None] = [None] * len(params)
    lrs, losses = schedule(sc), []
    rows_per_batch = sc.processes * sc.per_device_batch_size
    for update in range(sc.total_updates):
        start, end = sc.window(update)
        for q in params:
            q.grad = None
        loss = F.mse_loss(forward(p, x[start:end]), y[start:end])
        batches = (end - start) // rows_per_batch
        (loss * (batches / sc.gradient_accumulation_steps)).backward()  # type: ignore[no-untyped-call]
        losses.append(float(loss.detach()))
        sgd_step(params, buffers, lrs[update], momentum=sc.momentum)
    return Reference(params={k: v.detach().clone() for k, v in p.items()}, lrs=lrs, losses=losses)
