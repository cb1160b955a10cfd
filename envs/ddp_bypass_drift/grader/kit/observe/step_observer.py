"""Record, on every rank, the weights and gradients each optimizer step starts from.

Two of torch's *global* hooks, so nothing depends on how the workspace is organised beyond
"a torch model trained by a torch optimizer":

* a module forward pre-hook finds the model: the module inside the first
  ``DistributedDataParallel`` that runs forward (or the first root module to run forward
  when there is none), whose ``named_parameters()`` name what the optimizer holds;
* optimizer step pre/post hooks copy, before step ``k``, every parameter and its gradient
  (a missing gradient is recorded as zeros), and after the last observed step the
  parameters it produced.

After ``TRAINFAIL_OBSERVE_STEPS`` steps each rank writes ``rank<R>.pt`` (atomically) into
``TRAINFAIL_OBSERVE_DIR``: ``{"format", "rank", "world", "params": [{name: fp32}],
"grads": [{name: fp32}], "final": {name: fp32}}``.

The observer runs inside the revision's processes, so the judge takes none of this on trust:
the first record must be the grader's initial weights, each step must replay as SGD to the
next, every gradient must be the judge's own global-batch gradient, and the last state must
be the checkpoint the pipeline saved.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import torch
from torch import nn
from torch.nn.modules.module import register_module_forward_hook, register_module_forward_pre_hook
from torch.optim.optimizer import register_optimizer_step_post_hook, register_optimizer_step_pre_hook

RECORD_FORMAT = 1


class StepObserver:
    """Copies parameters and gradients around every optimizer step."""

    def __init__(self, out_dir: Path, steps: int, rank: int, world: int) -> None:
        self.out_dir = out_dir
        self.steps = steps
        self.rank = rank
        self.world = world
        self.root: nn.Module | None = None
        self.from_ddp = False
        self.depth = 0
        self.params: list[dict[str, torch.Tensor]] = []
        self.grads: list[dict[str, torch.Tensor]] = []
        self.done = 0
        self.written = False

    def on_forward_pre(self, module: nn.Module, args: tuple[Any, ...]) -> None:
        """Remember the model: the module a DDP wrapper holds, else the first root."""
        if isinstance(module, nn.parallel.DistributedDataParallel):
            if not self.from_ddp:
                self.root, self.from_ddp = module.module, True
        elif self.depth == 0 and self.root is None and any(True for _ in module.parameters()):
            self.root = module
        self.depth += 1

    def on_forward_post(self, module: nn.Module, args: tuple[Any, ...], output: Any) -> None:
        """Leave one level of the module call tree."""
        self.depth = max(0, self.depth - 1)

    def _named(self, optimizer: torch.optim.Optimizer) -> list[tuple[str, torch.Tensor]]:
        names = {id(p): n for n, p in self.root.named_parameters()} if self.root is not None else {}
        out = []
        index = 0
        for group in optimizer.param_groups:
            for p in group["params"]:
                out.append((names.get(id(p), f"unnamed.{index}"), p))
                index += 1
        return out

    def on_step_pre(self, optimizer: torch.optim.Optimizer, args: Any, kwargs: Any) -> None:
        """Before step ``k``: the weights it starts from and the gradients it applies."""
        if self.written or len(self.params) >= self.steps:
            return
        with torch.no_grad():
            named = self._named(optimizer)
            self.params.append({n: p.detach().to("cpu", torch.float32).clone() for n, p in named})
            self.grads.append({n: (p.grad.detach().to("cpu", torch.float32).clone() if p.grad is not None
                                   else torch.zeros(p.shape, dtype=torch.float32)) for n, p in named})

    def on_step_post(self, optimizer: torch.optim.Optimizer, args: Any, kwargs: Any) -> None:
        """After the last observed step: the weights it produced, then the record."""
        if self.written:
            return
        self.done += 1
        if self.done >= self.steps:
            with torch.no_grad():
                final = {n: p.detach().to("cpu", torch.float32).clone() for n, p in self._named(optimizer)}
            self._write(final)

    def _write(self, final: dict[str, torch.Tensor]) -> None:
        self.written = True
        payload = {"format": RECORD_FORMAT, "rank": self.rank, "world": self.world,
                   "params": self.params, "grads": self.grads, "final": final}
        self.out_dir.mkdir(parents=True, exist_ok=True)
        tmp = self.out_dir / f".rank{self.rank}.pt.tmp"
        torch.save(payload, tmp)
        os.replace(tmp, self.out_dir / f"rank{self.rank}.pt")
        self.params, self.grads = [], []


def install_from_env() -> StepObserver | None:
    """Register the hooks when ``TRAINFAIL_OBSERVE_DIR`` and ``_STEPS`` are set."""
    folder = os.environ.get("TRAINFAIL_OBSERVE_DIR")
    steps = os.environ.get("TRAINFAIL_OBSERVE_STEPS")
    if not folder or not steps:
        return None
    observer = StepObserver(Path(folder), int(steps), int(os.environ.get("RANK", "0")),
                            int(os.environ.get("WORLD_SIZE", "1")))
    register_module_forward_pre_hook(observer.on_forward_pre)
    register_module_forward_hook(observer.on_forward_post)
    register_optimizer_step_pre_hook(observer.on_step_pre)
    register_optimizer_step_post_hook(observer.on_step_post)
    return observer
