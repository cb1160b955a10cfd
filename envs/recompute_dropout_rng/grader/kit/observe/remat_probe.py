"""In every rank: what each training forward drew and fed, what backward recomputed, and each update.

Per training forward of the model (the outermost forward of the module DDP holds, in training
mode with grad on): the default generator's state as the forward starts, the token ids it was
called with, and the ``nn.Dropout`` calls it made (name, activation shape). Between one forward
and the next, every outermost module call that is not the model's own forward (what
``torch.utils.checkpoint`` runs again during backward) is listed by name, with the dropout calls
it made. Per step of the watched optimizer: the parameters just before it and their gradients;
after the last watched step (``TRAINFAIL_OBSERVE_STEPS``) the parameters it produced. Names are
the model's own, with torch's ``_checkpoint_wrapped_module`` level dropped. This runs in the
revision's processes: the judge recomputes every gradient and replays every update.
"""
from __future__ import annotations

from typing import Any

import torch
from rank_observer import RankObserver, cpu32, unwrap  # the harness library's rank-side half
from torch import nn
from torch.nn.modules.module import register_module_forward_hook

WRAPPED = "_checkpoint_wrapped_module"


def canonical(name: str) -> str:
    return ".".join(part for part in name.split(".") if part != WRAPPED)


class RematProbe(RankObserver):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.names: dict[int, str] = {}
        self.forwards: list[dict[str, Any]] = []
        self.in_forward = False
        self.params: list[dict[str, torch.Tensor]] = []
        self.grads: list[dict[str, torch.Tensor]] = []

    def install(self, *, forward: bool = True, steps: bool = True) -> RematProbe:
        super().install(forward=forward, steps=steps)
        register_module_forward_hook(self._dropout_post)
        return self

    def _is_model(self, module: nn.Module) -> bool:
        model = self.model()
        return model is not None and unwrap(module) is model

    def _forward_pre(self, module: nn.Module, args: tuple[Any, ...]) -> None:
        if self._is_model(module) and not self.in_forward:
            # torch's non-reentrant checkpoint stops a recomputation early (by raising inside it),
            # so the forward post hooks of what it recomputed never run: the SDK's call depth is
            # stale after a backward. The model's own forward always starts a fresh count.
            self.depth = 0
        elif not self._is_model(module) and self.forwards and not self.in_forward and len(self.forwards[-1]["recomputed"]) < 4096:
            name = self.names.get(id(module), f"<{type(module).__name__}>")
            if name not in self.forwards[-1]["recomputed"]:
                self.forwards[-1]["recomputed"].append(name)
        super()._forward_pre(module, args)

    def on_root_forward(self, module: nn.Module, args: tuple[Any, ...]) -> None:
        if self._is_model(module):
            model = unwrap(module)
            if not (model.training and torch.is_grad_enabled()):
                return
            self.names = {id(m): canonical(n) for n, m in model.named_modules()}
            ids = next((a for a in args if isinstance(a, torch.Tensor) and not a.is_floating_point()), None)
            self.forwards.append({
                "rng": torch.get_rng_state(),
                "ids": ids.detach().to("cpu", torch.int64).clone() if ids is not None else None,
                "dropouts": [], "recomputed": [], "recompute_dropouts": [],
            })
            self.in_forward = True

    def on_root_forward_end(self, module: nn.Module, args: tuple[Any, ...], output: Any) -> None:
        if self._is_model(module):
            self.in_forward = False

    def _dropout_post(self, module: nn.Module, args: tuple[Any, ...], output: Any) -> None:
        if self.written or not self.forwards or not isinstance(module, nn.Dropout) or not module.training:
            return
        name = self.names.get(id(module), "<unnamed Dropout>")
        if self.in_forward:
            shape = list(output.shape) if isinstance(output, torch.Tensor) else []
            self.forwards[-1]["dropouts"].append([name, shape])
        else:
            self.forwards[-1]["recompute_dropouts"].append(name)

    def on_step_pre(self, optimizer: torch.optim.Optimizer, step: int) -> None:
        named = self.named(optimizer)
        self.params.append({canonical(n): cpu32(p) for n, p in named})
        self.grads.append({canonical(n): cpu32(p.grad) if p.grad is not None else torch.zeros(p.shape)
                           for n, p in named})

    def on_step_post(self, optimizer: torch.optim.Optimizer, step: int) -> None:
        if step + 1 == self.steps:
            final = {canonical(n): cpu32(p) for n, p in self.named(optimizer)}
            self.write({"forwards": self.forwards, "params": self.params, "grads": self.grads, "final": final})


def install() -> None:
    """Start the probe when the job is observed (``TRAINFAIL_OBSERVE_DIR`` set)."""
    probe = RematProbe.from_env()
    if probe is not None:
        probe.install()
