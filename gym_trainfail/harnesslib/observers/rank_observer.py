"""Building blocks for observers that run inside a training rank (the revision's process).

An observer sees the run through torch's *global* hooks only, so nothing depends on how the
workspace is organised beyond "a torch model trained by a torch optimizer":

* module forward pre/post hooks track the module call depth and find the model: the module a
  ``DistributedDataParallel`` (or DeepSpeed engine, or FSDP) wrapper holds, else the first
  root module with parameters that runs forward; :meth:`RankObserver.on_root_forward` is called
  at the start of every outermost forward (training or not: check ``root.training``);
* optimizer step pre/post hooks call :meth:`RankObserver.on_step_pre` / ``on_step_post`` for
  the first optimizer that steps (``watched``), with the step's index.

A subclass records what its judge compares (parameters, gradients, inputs, masks, learning
rates, RNG states ...) and calls :meth:`RankObserver.write` once: ``rank<R>.pt`` in
``TRAINFAIL_OBSERVE_DIR``, written atomically, a dict of plain tensors, lists and numbers with
``format``, ``rank`` and ``world`` (read back with ``readers.read_rank_records``). Settings come
from the job's environment (``TRAINFAIL_OBSERVE_DIR``, ``TRAINFAIL_OBSERVE_STEPS``, and any
``TRAINFAIL_OBSERVE_*`` of the case's).

Whatever an observer writes runs inside the revision's processes and could have been rewritten
by it: judges cross-check it against what they recompute, never take it on trust.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import torch
from torch import nn
from torch.nn.modules.module import register_module_forward_hook, register_module_forward_pre_hook
from torch.optim.optimizer import register_optimizer_step_post_hook, register_optimizer_step_pre_hook

#: Wrapper classes whose ``.module`` is the user's model (by class name: no import needed).
WRAPPERS = ("DistributedDataParallel", "DeepSpeedEngine", "FullyShardedDataParallel", "DataParallel")


def unwrap(module: nn.Module) -> nn.Module:
    """The user's model inside any chain of wrappers that keep it as ``.module``."""
    while True:
        inner = getattr(module, "module", None)
        if not isinstance(inner, nn.Module):
            return module
        module = inner


def cpu32(tensor: torch.Tensor) -> torch.Tensor:
    """A detached float32 CPU copy."""
    return tensor.detach().to(device="cpu", dtype=torch.float32).clone()


def master_weight(param: torch.Tensor) -> torch.Tensor:
    """The fp32 master copy DeepSpeed's bf16/fp16 optimizers keep of ``param`` (linked through
    ``_hp_mapping``), else the parameter itself, as a float32 CPU copy."""
    mapping = getattr(param, "_hp_mapping", None)
    if mapping is None:
        return cpu32(param)
    flat = torch.zeros(param.numel(), dtype=torch.float32)
    address = mapping.lp_fragment_address
    fragment = mapping.get_hp_fragment().detach().to(device="cpu", dtype=torch.float32).reshape(-1)
    flat.narrow(0, address.start, address.numel).copy_(fragment)
    return flat.view(param.shape)


def env_int(name: str, default: int) -> int:
    """An integer setting from the job's environment."""
    value = os.environ.get(name, "")
    return int(value) if value.strip() else default


class RankObserver:
    """Global hooks, the model and the watched optimizer; subclasses record and :meth:`write`."""

    #: Layout version of the record (a judge refuses any other).
    FORMAT = 1

    def __init__(self, out_dir: Path, steps: int, rank: int, world: int) -> None:
        self.out_dir, self.steps, self.rank, self.world = out_dir, steps, rank, world
        self.root: nn.Module | None = None
        self.from_wrapper = False
        self.depth = 0
        self.watched: int | None = None
        self.step_index = 0
        self.written = False

    # -- installation ----------------------------------------------------------------------------

    @classmethod
    def from_env(cls, **kwargs: Any) -> RankObserver | None:
        """An observer configured from the job's environment (``None`` when it is not set)."""
        folder = os.environ.get("TRAINFAIL_OBSERVE_DIR")
        if not folder:
            return None
        return cls(Path(folder), env_int("TRAINFAIL_OBSERVE_STEPS", 1), env_int("RANK", 0), env_int("WORLD_SIZE", 1),
                   **kwargs)  # fmt: skip

    def install(self, *, forward: bool = True, steps: bool = True) -> RankObserver:
        """Register the global hooks this observer uses."""
        if forward:
            register_module_forward_pre_hook(self._forward_pre)
            register_module_forward_hook(self._forward_post)
        if steps:
            register_optimizer_step_pre_hook(self._step_pre)
            register_optimizer_step_post_hook(self._step_post)
        return self

    # -- hooks -----------------------------------------------------------------------------------

    def _forward_pre(self, module: nn.Module, args: tuple[Any, ...]) -> None:
        if type(module).__name__ in WRAPPERS:
            if not self.from_wrapper:
                self.root, self.from_wrapper = unwrap(module), True
        elif self.depth == 0 and self.root is None and any(True for _ in module.parameters()):
            self.root = module
        outermost = self.depth == 0
        self.depth += 1
        if outermost and not self.written:
            self.on_root_forward(module, args)

    def _forward_post(self, module: nn.Module, args: tuple[Any, ...], output: Any) -> None:
        self.depth = max(0, self.depth - 1)
        if self.depth == 0 and not self.written:
            self.on_root_forward_end(module, args, output)

    def _step_pre(self, optimizer: torch.optim.Optimizer, args: Any, kwargs: Any) -> None:
        if self._mine(optimizer):
            self.on_step_pre(optimizer, self.step_index)

    def _step_post(self, optimizer: torch.optim.Optimizer, args: Any, kwargs: Any) -> None:
        if self._mine(optimizer):
            index = self.step_index
            self.step_index += 1
            self.on_step_post(optimizer, index)

    def _mine(self, optimizer: torch.optim.Optimizer) -> bool:
        if self.written:
            return False
        if self.watched is None:
            self.watched = id(optimizer)
        return self.watched == id(optimizer)

    # -- what subclasses override ----------------------------------------------------------------

    def on_root_forward(self, module: nn.Module, args: tuple[Any, ...]) -> None:
        """At the start of an outermost forward (``module`` the called module, maybe a wrapper)."""

    def on_root_forward_end(self, module: nn.Module, args: tuple[Any, ...], output: Any) -> None:
        """At the end of an outermost forward."""

    def on_step_pre(self, optimizer: torch.optim.Optimizer, step: int) -> None:
        """Before the watched optimizer's step ``step`` (0-based)."""

    def on_step_post(self, optimizer: torch.optim.Optimizer, step: int) -> None:
        """After the watched optimizer's step ``step``."""

    # -- helpers ---------------------------------------------------------------------------------

    def model(self) -> nn.Module | None:
        """The user's model, once a forward has run."""
        return unwrap(self.root) if self.root is not None else None

    def named(self, optimizer: torch.optim.Optimizer) -> list[tuple[str, torch.Tensor]]:
        """The optimizer's parameters in its order, named as the model names them
        (``unnamed.<i>`` for one the model does not hold)."""
        model = self.model()
        names = {id(p): n for n, p in model.named_parameters()} if model is not None else {}
        out: list[tuple[str, torch.Tensor]] = []
        for group in optimizer.param_groups:
            for param in group["params"]:
                out.append((names.get(id(param), f"unnamed.{len(out)}"), param))
        return out

    def write(self, payload: dict[str, Any]) -> Path:
        """Write the record once (atomically): ``payload`` with ``format``, ``rank``, ``world``."""
        self.written = True
        record = {"format": self.FORMAT, "rank": self.rank, "world": self.world, **payload}
        self.out_dir.mkdir(parents=True, exist_ok=True)
        tmp = self.out_dir / f".rank{self.rank}.pt.tmp"
        torch.save(record, tmp)
        final = self.out_dir / f"rank{self.rank}.pt"
        os.replace(tmp, final)
        return final
