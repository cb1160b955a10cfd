"""Record, on every rank, the weights each training step starts from.

One global module forward pre-hook: when a training forward pass enters the root module
(a ``DeepSpeedEngine`` is unwrapped to the model inside it), the observer copies every named
parameter of the model as the optimizer holds it: the fp32 master weight when DeepSpeed keeps
one (bf16 training links each bf16 parameter to its fp32 master through ``_hp_mapping``), the
parameter itself otherwise. The copy taken before forward ``k`` is the state step ``k - 1``
produced, after anything the pipeline does between steps; the one before forward 0 is the
initial state.

With ``TRAINFAIL_OBSERVE_FULL_EVERY`` = ``n`` (default 1) every parameter is copied at the
start of steps ``0, n, 2n, …`` and of the last observed step, and only the replicated ones (not
split by the README's layout, ``SPLIT_SUFFIXES``) at the other steps: at production width the
split matrices would weigh gigabytes per record.

After ``TRAINFAIL_OBSERVE_STEPS`` forwards each rank writes ``rank<R>.pt`` (atomically) into
``TRAINFAIL_OBSERVE_DIR``: ``{"format", "rank", "names", "states": [{name: fp32 tensor}],
"times"}``. The state after the last step is the pipeline's own final checkpoint.

The observer runs inside the revision's processes, so the judge takes none of this on trust:
every recorded state must match its own TP=1 reference, and the records must agree with the
checkpoint the pipeline saved.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import torch
from torch import nn
from torch.nn.modules.module import register_module_forward_hook, register_module_forward_pre_hook

RECORD_FORMAT = 1
#: Parameters the workspace README splits across tensor-parallel ranks (all others are replicated).
SPLIT_SUFFIXES = ("mlp.fc1.weight", "mlp.fc1.bias", "mlp.fc2.weight")


def unwrap(module: nn.Module) -> nn.Module:
    """The user's model inside a DeepSpeed engine or a data-parallel wrapper."""
    while True:
        inner = getattr(module, "module", None)
        if not isinstance(inner, nn.Module):
            return module
        module = inner


def master_weight(param: torch.Tensor) -> torch.Tensor:
    """The fp32 master copy of a bf16 parameter DeepSpeed optimizes, else the parameter."""
    mapping = getattr(param, "_hp_mapping", None)
    if mapping is None:
        return param.detach().to(device="cpu", dtype=torch.float32).clone()
    flat = torch.zeros(param.numel(), dtype=torch.float32)
    address = mapping.lp_fragment_address
    fragment = mapping.get_hp_fragment().detach().to(device="cpu", dtype=torch.float32).reshape(-1)
    flat.narrow(0, address.start, address.numel).copy_(fragment)
    return flat.view(param.shape)


class ReplicaObserver:
    """Copies the optimizer's view of the model at the start of every training forward."""

    def __init__(self, out_dir: Path, steps: int, rank: int, full_every: int = 1) -> None:
        self.out_dir = out_dir
        self.steps = steps
        self.rank = rank
        self.full_every = max(1, full_every)
        self.depth = 0
        self.names: list[str] | None = None
        self.states: list[dict[str, torch.Tensor]] = []
        self.times: list[float] = []
        self.written = False

    def on_forward_pre(self, module: nn.Module, args: tuple[Any, ...]) -> None:
        """At the root of a training forward pass, snapshot the weights."""
        if self.depth == 0 and not self.written:
            self._snapshot(unwrap(module))
        self.depth += 1

    def on_forward_post(self, module: nn.Module, args: tuple[Any, ...], output: Any) -> None:
        """Leave one level of the module call tree."""
        self.depth = max(0, self.depth - 1)

    def _snapshot(self, root: nn.Module) -> None:
        named = list(root.named_parameters())
        if not named or not root.training or not torch.is_grad_enabled():
            return
        index = len(self.states)
        full = index % self.full_every == 0 or index == self.steps - 1
        with torch.no_grad():
            state = {name: master_weight(param) for name, param in named
                     if full or not name.endswith(SPLIT_SUFFIXES)}
        self.states.append(state)
        self.times.append(time.time())
        if len(self.states) >= self.steps:
            self._write()

    def _write(self) -> None:
        self.written = True
        payload = {"format": RECORD_FORMAT, "rank": self.rank, "names": list(self.states[0]),
                   "states": self.states, "times": self.times}
        self.out_dir.mkdir(parents=True, exist_ok=True)
        tmp = self.out_dir / f".rank{self.rank}.pt.tmp"
        torch.save(payload, tmp)
        os.replace(tmp, self.out_dir / f"rank{self.rank}.pt")
        self.states = []


def install_from_env() -> ReplicaObserver | None:
    """Register the hooks when ``TRAINFAIL_OBSERVE_DIR`` and ``_STEPS`` are set."""
    folder = os.environ.get("TRAINFAIL_OBSERVE_DIR")
    steps = os.environ.get("TRAINFAIL_OBSERVE_STEPS")
    if not folder or not steps:
        return None
    full_every = int(os.environ.get("TRAINFAIL_OBSERVE_FULL_EVERY", "1"))
    observer = ReplicaObserver(Path(folder), int(steps), int(os.environ.get("RANK", "0")), full_every)
    register_module_forward_pre_hook(observer.on_forward_pre)
    register_module_forward_hook(observer.on_forward_post)
    return observer
