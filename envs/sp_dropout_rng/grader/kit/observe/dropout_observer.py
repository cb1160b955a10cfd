"""Record, on every rank, each training step's starting weights and its dropout masks.

Global module hooks: when a training forward pass enters the root module, the observer copies
every named parameter (fp32, CPU) and starts a new step record; every ``nn.Dropout`` module
that runs in training mode during that forward adds ``(module name, output != 0)`` to it, in
call order. A global optimizer step post-hook counts optimizer steps; after
``TRAINFAIL_OBSERVE_STEPS`` of them each rank writes ``rank<R>.pt`` (atomically) into
``TRAINFAIL_OBSERVE_DIR``: ``{"format", "rank", "steps": [{"params": {name: tensor},
"masks": [[name, bool tensor], ...]}], "times"}``. The state after the last step is the
pipeline's own final checkpoint.

With ``TRAINFAIL_OBSERVE_AUTOCAST=record`` (scenarios whose config asks for ``model.bf16``) the
observer also patches the library's autocast class (``torch.amp.autocast_mode.autocast``: what
``torch.autocast``, ``torch.amp.autocast`` and ``torch.cpu.amp.autocast`` are) so that entering
and leaving one is recorded. For CPU device types the patched context manager is a no-op
(``nullcontext`` semantics: a CPU bf16 autocast cannot run megatron-core 0.16.1's linear layers,
which cast for CUDA autocast only, and training must stay bitwise fp32 so that every other
check still applies); other device types run the real autocast. Each step record then carries
``"autocast": {"modules": [[module name, state], ...]}``: for every module forward of the step,
the autocast in force when it started (``"cpu:bfloat16"``, ``"off"``…: the innermost entered
one, as real autocast nests).

The observer runs inside the revision's processes, so the judge takes none of this on trust:
it recomputes every step's update from its own copy of the data, the recorded weights and the
recorded masks, and requires it to land on the next recorded weights and, at the end, on the
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
from torch.optim.optimizer import register_optimizer_step_post_hook

RECORD_FORMAT = 1
#: The state of a module forward run outside any entered (enabled) autocast.
AUTOCAST_OFF = "off"


class AutocastProbe:
    """Which autocasts are entered now, seen through the library's own autocast class."""

    def __init__(self) -> None:
        self.active: list[tuple[str, str, bool]] = []

    def state(self) -> str:
        """``device:dtype`` of the innermost entered autocast if it is enabled, else ``off``."""
        if not self.active:
            return AUTOCAST_OFF
        device, dtype, enabled = self.active[-1]
        return f"{device}:{dtype}" if enabled else AUTOCAST_OFF

    def install(self) -> None:
        """Patch ``__enter__``/``__exit__`` of torch's autocast class (every alias shares it)."""
        cls = torch.amp.autocast_mode.autocast
        real_enter, real_exit = cls.__enter__, cls.__exit__
        probe = self

        def enter(ctx: Any) -> Any:
            dtype = str(ctx.fast_dtype).removeprefix("torch.")
            probe.active.append((str(ctx.device), dtype, bool(ctx._enabled)))
            if ctx.device == "cpu":
                return ctx  # recorded, not applied: fp32 numerics on CPU ranks
            return real_enter(ctx)

        def leave(ctx: Any, exc_type: Any, exc_val: Any, exc_tb: Any) -> Any:
            if probe.active:
                probe.active.pop()
            if ctx.device == "cpu":
                return False
            return real_exit(ctx, exc_type, exc_val, exc_tb)

        cls.__enter__ = enter  # type: ignore[method-assign]
        cls.__exit__ = leave  # type: ignore[method-assign]


class DropoutObserver:
    """Per-step weights and dropout masks of the root model's training forwards."""

    def __init__(self, out_dir: Path, steps: int, rank: int, autocast: AutocastProbe | None = None) -> None:
        self.out_dir = out_dir
        self.steps = steps
        self.rank = rank
        self.autocast = autocast
        self.depth = 0
        self.recording = False
        self.names: dict[int, str] = {}
        self.records: list[dict[str, Any]] = []
        self.times: list[float] = []
        self.optimizer_steps = 0
        self.written = False

    def on_forward_pre(self, module: nn.Module, args: tuple[Any, ...]) -> None:
        """At the root of a training forward pass, start a step record; note the autocast state."""
        if self.depth == 0 and not self.written:
            self.recording = self._start(module)
        if self.recording and self.autocast is not None:
            modules = self.records[-1]["autocast"]["modules"]
            name = self.names.get(id(module), f"<unnamed {type(module).__name__}>")
            modules.append([name, self.autocast.state()])
        self.depth += 1

    def on_forward_post(self, module: nn.Module, args: tuple[Any, ...], output: Any) -> None:
        """Record a dropout mask; leave one level of the module call tree."""
        self.depth = max(0, self.depth - 1)
        if (isinstance(module, nn.Dropout) and module.training and self.records
                and not self.written and isinstance(output, torch.Tensor)):
            name = self.names.get(id(module), f"<unnamed {type(module).__name__}>")
            self.records[-1]["masks"].append([name, (output.detach() != 0).cpu()])
        if self.depth == 0:
            self.recording = False

    def _start(self, root: nn.Module) -> bool:
        named = list(root.named_parameters())
        if not named or not root.training or not torch.is_grad_enabled():
            return False
        self.names = {id(m): n for n, m in root.named_modules()}
        with torch.no_grad():
            params = {n: p.detach().to(device="cpu", dtype=torch.float32).clone() for n, p in named}
        record: dict[str, Any] = {"params": params, "masks": []}
        if self.autocast is not None:
            record["autocast"] = {"modules": []}
        self.records.append(record)
        self.times.append(time.time())
        return True

    def on_step(self, optimizer: Any, args: Any, kwargs: Any) -> None:
        """After the configured number of optimizer steps, write the records."""
        if self.written:
            return
        self.optimizer_steps += 1
        if self.optimizer_steps >= self.steps:
            self._write()

    def _write(self) -> None:
        self.written = True
        payload = {"format": RECORD_FORMAT, "rank": self.rank, "steps": self.records, "times": self.times}
        self.out_dir.mkdir(parents=True, exist_ok=True)
        tmp = self.out_dir / f".rank{self.rank}.pt.tmp"
        torch.save(payload, tmp)
        os.replace(tmp, self.out_dir / f"rank{self.rank}.pt")
        self.records = []


def install_from_env() -> DropoutObserver | None:
    """Register the hooks when ``TRAINFAIL_OBSERVE_DIR`` and ``_STEPS`` are set (and the autocast
    probe when ``TRAINFAIL_OBSERVE_AUTOCAST`` is ``record``)."""
    folder = os.environ.get("TRAINFAIL_OBSERVE_DIR")
    steps = os.environ.get("TRAINFAIL_OBSERVE_STEPS")
    if not folder or not steps:
        return None
    probe = None
    if os.environ.get("TRAINFAIL_OBSERVE_AUTOCAST") == "record":
        probe = AutocastProbe()
        probe.install()
    observer = DropoutObserver(Path(folder), int(steps), int(os.environ.get("RANK", "0")), probe)
    register_module_forward_pre_hook(observer.on_forward_pre)
    register_module_forward_hook(observer.on_forward_post)
    register_optimizer_step_post_hook(observer.on_step)
    return observer
