"""In each rank: the named weights every optimizer step starts from, and the gradients it applies.

The harness library's ``RankObserver`` finds the model (the module inside the DDP wrapper) and
the optimizer; before each step this observer copies every parameter the optimizer holds and
its gradient (zeros for a missing one), named as the model names them, and after the last
observed step the weights it produced: ``params`` and ``grads`` (a state a step) and ``final``.
Everything here runs in the revision's processes, so the judge checks it against its own
float64 gradients, the SGD replay and the checkpoint the pipeline saved.
"""
from __future__ import annotations

from pathlib import Path

import torch
from rank_observer import RankObserver, cpu32  # the harness library's observer base


class ReplicaSteps(RankObserver):
    """Named copies of the weights and gradients around every optimizer step."""

    def __init__(self, out_dir: Path, steps: int, rank: int, world: int) -> None:
        super().__init__(out_dir, steps, rank, world)
        self.params: list[dict[str, torch.Tensor]] = []
        self.grads: list[dict[str, torch.Tensor]] = []

    @torch.no_grad()
    def on_step_pre(self, optimizer: torch.optim.Optimizer, step: int) -> None:
        named = self.named(optimizer)
        self.params.append({name: cpu32(p) for name, p in named})
        self.grads.append({name: cpu32(p.grad) if p.grad is not None else torch.zeros(p.shape) for name, p in named})

    @torch.no_grad()
    def on_step_post(self, optimizer: torch.optim.Optimizer, step: int) -> None:
        if step + 1 >= self.steps:
            final = {name: cpu32(p) for name, p in self.named(optimizer)}
            self.write({"params": self.params, "grads": self.grads, "final": final})


def start() -> None:
    """Install the observer when the job's environment asks for one."""
    observer = ReplicaSteps.from_env()
    if observer is not None:
        observer.install()
