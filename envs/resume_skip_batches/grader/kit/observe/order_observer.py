"""Inside every rank: the feature rows each training forward consumed, in order.

At each outermost forward with gradients on, the first tensor argument (a micro-batch of table
rows) is kept as float32; after the launch's last optimizer step (``TRAINFAIL_OBSERVE_STEPS``)
the rank writes them as ``{"forwards": [...]}`` (``rank_observer``'s atomic record).

This runs in the revision's processes: the judge maps every row back to its own copy of the
table and, independently, requires every saved model to be the uninterrupted run's, so a
rewritten record can at best describe correct training.
"""

from __future__ import annotations

from typing import Any

import torch
from rank_observer import RankObserver, cpu32  # the harness library's rank-side half
from torch import nn


class OrderObserver(RankObserver):
    """Keeps the rows of every training forward until the launch's last step."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.forwards: list[torch.Tensor] = []

    def on_root_forward(self, module: nn.Module, args: tuple[Any, ...]) -> None:
        rows = next((a for a in args if isinstance(a, torch.Tensor)), None)
        if torch.is_grad_enabled() and rows is not None and rows.dim() == 2:
            self.forwards.append(cpu32(rows))

    def on_step_post(self, optimizer: torch.optim.Optimizer, step: int) -> None:
        if step + 1 == self.steps:
            self.write({"forwards": self.forwards})


def install() -> None:
    """Start the observer when the job is observed (``TRAINFAIL_OBSERVE_DIR`` set)."""
    observer = OrderObserver.from_env()
    if observer is not None:
        observer.install()
