"""In each rank: the flat fp32 partition every optimizer step starts from and the gradient it applies.

Under DeepSpeed the first optimizer that steps is the client SGD the engine drives: its
parameters are the rank's flat fp32 master partitions, their ``.grad`` the gradient partition
the step applies (after DeepSpeed's reduction and any clipping). The record holds ``params`` and
``grads`` (flat over the parameter groups, a missing gradient as NaN; one tensor a step) and
``final``; the judge stitches the ranks' partitions and checks them against its own recomputation.
"""
from __future__ import annotations

import gc
from pathlib import Path

import torch
from rank_observer import RankObserver  # the harness library's observer base


def flat(optimizer: torch.optim.Optimizer, grads: bool) -> torch.Tensor:
    """Every parameter (or its gradient) of ``optimizer``, as one float32 CPU vector."""
    parts = []
    for group in optimizer.param_groups:
        for param in group["params"]:
            tensor = param if not grads else param.grad if param.grad is not None else torch.full_like(param, torch.nan)
            parts.append(tensor.detach().to(device="cpu", dtype=torch.float32).reshape(-1))
    return torch.cat(parts) if parts else torch.zeros(0)


class PartitionObserver(RankObserver):
    """Per-step copies of the watched optimizer's flat weights and gradients."""

    def __init__(self, out_dir: Path, steps: int, rank: int, world: int) -> None:
        super().__init__(out_dir, steps, rank, world)
        self.weights: list[torch.Tensor] = []
        self.grads: list[torch.Tensor] = []

    def on_step_pre(self, optimizer: torch.optim.Optimizer, step: int) -> None:
        self.weights.append(flat(optimizer, grads=False))
        self.grads.append(flat(optimizer, grads=True))

    def on_step_post(self, optimizer: torch.optim.Optimizer, step: int) -> None:
        if step + 1 >= self.steps:
            self.write({"params": self.weights, "grads": self.grads, "final": flat(optimizer, grads=False)})


def start() -> None:
    """Install the observer when the job's environment asks for one.

    DeepSpeed's BF16 optimizer runs ``gc.collect()`` four times while it is built: with the heap
    (in a warm-launched rank, every preloaded library) frozen first, they take milliseconds.
    """
    observer = PartitionObserver.from_env()
    if observer is not None:
        gc.freeze()
        observer.install(forward=False)
