"""In each rank: at which training iterations the watched optimizer actually stepped.

An iteration starts at every outermost training forward; the optimizer's step hook fires only
when the loss scaler lets the step through. The record (rewritten after every event, so the
last one stands whether or not the last step was taken) holds ``iterations`` and ``applied``.
"""
from __future__ import annotations

from pathlib import Path

import torch
from rank_observer import RankObserver  # the harness library's observer base


class StepProbe(RankObserver):
    def __init__(self, out_dir: Path, steps: int, rank: int, world: int) -> None:
        super().__init__(out_dir, steps, rank, world)
        self.iterations = 0
        self.applied: list[int] = []

    def _save(self) -> None:
        self.write({"iterations": self.iterations, "applied": list(self.applied)})
        self.written = False  # keep observing: the record is rewritten after every event

    def on_root_forward(self, module: torch.nn.Module, args) -> None:
        if module.training:
            self.iterations += 1
            self._save()

    def on_step_post(self, optimizer: torch.optim.Optimizer, step: int) -> None:
        self.applied.append(self.iterations - 1)
        self._save()


def start() -> None:
    observer = StepProbe.from_env()
    if observer is not None:
        observer.install()
