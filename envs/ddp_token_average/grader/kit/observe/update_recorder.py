"""Inside every rank: per update of the watched optimizer, the parameters just before the step,
their gradients (after the Trainer's clipping) and the token rows the training forwards fed the
input embedding since the last update; after the last recorded one (``TRAINFAIL_OBSERVE_STEPS``),
the parameters it produced. This runs in the revision's processes: the judge recomputes every
gradient, replays the optimizer over the records and compares them with the saved model.
"""

from __future__ import annotations

import time
from typing import Any

import torch
from rank_observer import RankObserver, cpu32, unwrap  # the harness library's rank-side half
from torch import nn
from torch.nn.modules.module import register_module_forward_pre_hook


class UpdateRecorder(RankObserver):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.embedding: nn.Module | None = None
        self.capturing = False
        self.rows: list[torch.Tensor] = []
        self.record: dict[str, list[Any]] = {"params": [], "grads": [], "rows": [], "times": []}
        self.first_forward: float | None = None

    def install(self, *, forward: bool = True, steps: bool = True) -> UpdateRecorder:
        super().install(forward=forward, steps=steps)
        register_module_forward_pre_hook(self._embedding_input)  # after the base's: depth is counted
        return self

    def on_root_forward(self, module: nn.Module, args: tuple[Any, ...]) -> None:
        model = unwrap(module)
        self.capturing = model.training and torch.is_grad_enabled() and next(model.parameters(), None) is not None
        if self.capturing:
            get = getattr(model, "get_input_embeddings", None)
            found = get() if callable(get) else None
            self.embedding = found if isinstance(found, nn.Module) else None
            self.first_forward = self.first_forward or time.time()

    def _embedding_input(self, module: nn.Module, args: tuple[Any, ...]) -> None:
        ids = args[0] if args and isinstance(args[0], torch.Tensor) else None
        hit = module is self.embedding if self.embedding is not None else isinstance(module, nn.Embedding)
        if self.capturing and not self.written and hit and ids is not None and not ids.is_floating_point():
            self.rows.append(ids.detach().to("cpu", torch.int64).reshape(-1, ids.shape[-1]).clone())
            self.capturing = False  # one forward, one batch of ids

    def on_step_pre(self, optimizer: torch.optim.Optimizer, step: int) -> None:
        named = self.named(optimizer)
        self.record["params"].append({n: cpu32(p) for n, p in named})
        self.record["grads"].append(
            {n: cpu32(p.grad) if p.grad is not None else torch.zeros(p.shape) for n, p in named}
        )
        self.record["rows"].append(self.rows)
        self.rows = []

    def on_step_post(self, optimizer: torch.optim.Optimizer, step: int) -> None:
        self.record["times"].append(time.time())
        if step + 1 == self.steps:
            final = {n: cpu32(p) for n, p in self.named(optimizer)}
            self.write({**self.record, "final": final, "first_forward": self.first_forward})


def install() -> None:
    """Start the recorder when the job is observed (``TRAINFAIL_OBSERVE_DIR`` set)."""
    recorder = UpdateRecorder.from_env()
    if recorder is not None:
        recorder.install()
