"""Record the first optimizer updates of a torch training job, whatever code drives it.

Only torch's global hooks are used, so the observer assumes nothing about the pipeline beyond
"a torch module trained by a torch optimizer":

- module forward pre/post hooks find the root module of each forward pass (unwrapping
  DistributedDataParallel) and the token ids fed to its input embedding;
- optimizer step pre/post hooks snapshot, for each update, the parameters before the step,
  their gradients and the token rows consumed since the previous update.

After ``TRAINFAIL_OBSERVE_STEPS`` updates each rank writes ``rank<R>.pt`` (atomically) into
``TRAINFAIL_OBSERVE_DIR``, before the job gets the chance to exit: the snapshots of every update
and the parameters the last one produced.

The observer runs inside the revision's processes, so the judge takes none of this on trust: it
replays the optimizer over the recorded updates and compares the result with the model the
pipeline saved.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import torch
from torch import nn
from torch.nn.modules.module import register_module_forward_hook, register_module_forward_pre_hook
from torch.optim.optimizer import (
    Optimizer,
    register_optimizer_step_post_hook,
    register_optimizer_step_pre_hook,
)

#: Version of the record layout (``final_params`` replaced a hash of them in format 2).
RECORD_FORMAT = 2

_WRAPPER_TYPES: tuple[type, ...] = (nn.parallel.DistributedDataParallel, nn.DataParallel)


def unwrap(module: nn.Module) -> nn.Module:
    """The user's model inside data-parallel or compile wrappers."""
    while True:
        attribute = "module" if isinstance(module, _WRAPPER_TYPES) else "_orig_mod"
        inner = getattr(module, attribute, None)
        if not isinstance(inner, nn.Module):
            return module
        module = inner


class UpdateObserver:
    """Collects per-update snapshots through global module and optimizer hooks."""

    def __init__(self, out_dir: Path, steps: int, rank: int, world_size: int) -> None:
        self.out_dir = out_dir
        self.steps = steps
        self.rank = rank
        self.world_size = world_size
        self.depth = 0
        self.root: nn.Module | None = None
        self.embedding: nn.Module | None = None
        self.recording = False
        self.captured = False
        self.forwards = 0
        self.rows: list[list[int]] = []
        self.pending: dict[str, Any] | None = None
        self.updates: list[dict[str, Any]] = []
        self.t_first_forward: float | None = None
        self.written = False

    # -- forward passes ---------------------------------------------------------------------

    def on_forward_pre(self, module: nn.Module, args: tuple[Any, ...]) -> None:
        """Detect the root of a forward pass, then the ids entering its input embedding."""
        if self.depth == 0:
            self._begin_pass(module)
        elif self.recording and not self.captured and self._is_input_embedding(module):
            self._capture(args)
        self.depth += 1

    def on_forward_post(self, module: nn.Module, args: tuple[Any, ...], output: Any) -> None:
        """Leave one level of the module call tree."""
        self.depth = max(0, self.depth - 1)

    def _begin_pass(self, module: nn.Module) -> None:
        root = unwrap(module)
        # Parameter-free modules called on their own (a loss module, say) are not the model.
        has_parameters = next(root.parameters(), None) is not None
        self.recording = not self.written and has_parameters and root.training and torch.is_grad_enabled()
        if not self.recording:
            return
        self.root = root
        get_embeddings = getattr(root, "get_input_embeddings", None)
        embedding = get_embeddings() if callable(get_embeddings) else None
        self.embedding = embedding if isinstance(embedding, nn.Module) else None
        self.captured = False
        self.forwards += 1
        if self.t_first_forward is None:
            self.t_first_forward = time.time()

    def _is_input_embedding(self, module: nn.Module) -> bool:
        if self.embedding is not None:
            return module is self.embedding
        return isinstance(module, nn.Embedding)

    def _capture(self, args: tuple[Any, ...]) -> None:
        if args and torch.is_tensor(args[0]) and not args[0].is_floating_point():
            ids = args[0].detach().cpu().reshape(-1, args[0].shape[-1])
            self.rows.extend(ids.tolist())
            self.captured = True

    # -- optimizer updates ------------------------------------------------------------------

    def on_step_pre(self, optimizer: Optimizer, args: Any, kwargs: Any) -> None:
        """Snapshot parameters and gradients just before an update of the observed model."""
        if self.written or not self._updates_root(optimizer):
            return
        assert self.root is not None  # _updates_root checked it
        named = dict(self.root.named_parameters())
        self.pending = {
            "params": {n: p.detach().cpu().clone() for n, p in named.items()},
            "grads": {n: None if p.grad is None else p.grad.detach().cpu().clone() for n, p in named.items()},
            "rows": self.rows,
            "forwards": self.forwards,
            "time": time.time(),
        }
        self.rows = []
        self.forwards = 0

    def on_step_post(self, optimizer: Optimizer, args: Any, kwargs: Any) -> None:
        """Close the update; write the record once enough updates were seen."""
        if self.pending is None:
            return
        self.updates.append(self.pending)
        self.pending = None
        if len(self.updates) >= self.steps:
            self._write()

    def _updates_root(self, optimizer: Optimizer) -> bool:
        # Wrappers (e.g. accelerate's) delegate to an inner optimizer that fires these hooks too.
        if isinstance(getattr(optimizer, "optimizer", None), Optimizer) or self.root is None:
            return False
        owned = {id(p) for p in self.root.parameters()}
        return any(id(p) in owned for group in optimizer.param_groups for p in group["params"])

    def _write(self) -> None:
        assert self.root is not None
        payload = {
            "format": RECORD_FORMAT,
            "rank": self.rank,
            "world_size": self.world_size,
            "root_type": type(self.root).__name__,
            "updates": self.updates,
            "final_params": {n: p.detach().cpu().clone() for n, p in self.root.named_parameters()},
            "t_first_forward": self.t_first_forward,
            "t_done": time.time(),
        }
        self.out_dir.mkdir(parents=True, exist_ok=True)
        target = self.out_dir / f"rank{self.rank}.pt"
        tmp = target.with_suffix(".pt.tmp")
        torch.save(payload, tmp)
        os.replace(tmp, target)
        self.written = True
        self.updates = []


def install(observer: UpdateObserver) -> None:
    """Register the observer's global hooks."""
    register_module_forward_pre_hook(observer.on_forward_pre)
    register_module_forward_hook(observer.on_forward_post, always_call=True)
    register_optimizer_step_pre_hook(observer.on_step_pre)
    register_optimizer_step_post_hook(observer.on_step_post)


def install_from_env() -> UpdateObserver | None:
    """Install an observer configured by ``TRAINFAIL_OBSERVE_*`` and torchrun's variables.

    The torchrun launcher itself (no ``RANK``) is left alone.
    """
    if "RANK" not in os.environ:
        return None
    observer = UpdateObserver(
        out_dir=Path(os.environ["TRAINFAIL_OBSERVE_DIR"]),
        steps=int(os.environ.get("TRAINFAIL_OBSERVE_STEPS", "3")),
        rank=int(os.environ["RANK"]),
        world_size=int(os.environ.get("WORLD_SIZE", "1")),
    )
    install(observer)
    return observer
