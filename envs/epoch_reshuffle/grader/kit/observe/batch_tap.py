"""Inside every rank: the windows each training forward of the model received, in order.

Training forwards (gradients on, model in train mode) are appended to one float32 matrix with
the size of each forward beside it; after the run's last optimizer step
(``TRAINFAIL_OBSERVE_STEPS``) the rank writes ``{"windows": [rows, features], "sizes": [...]}``.

It runs in the revision's processes: the judge names every row against its own table and,
separately, requires the saved model to be the one the specified order trains.
"""

from __future__ import annotations

from typing import Any

import torch
from rank_observer import RankObserver, cpu32  # the harness library's rank-side half


class BatchTap(RankObserver):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.chunks: list[torch.Tensor] = []

    def on_root_forward(self, module: torch.nn.Module, args: tuple[Any, ...]) -> None:
        first = args[0] if args else None
        if module.training and torch.is_grad_enabled() and isinstance(first, torch.Tensor):
            self.chunks.append(cpu32(first).reshape(first.shape[0], -1))

    def on_step_post(self, optimizer: torch.optim.Optimizer, step: int) -> None:
        if step + 1 >= self.steps:
            sizes = [int(c.shape[0]) for c in self.chunks]
            width = self.chunks[0].shape[1] if self.chunks else 0
            rows = torch.cat(self.chunks) if self.chunks else torch.zeros(0, width)
            self.write({"windows": rows, "sizes": sizes})


def install() -> None:
    tap = BatchTap.from_env()
    if tap is not None:
        tap.install()
