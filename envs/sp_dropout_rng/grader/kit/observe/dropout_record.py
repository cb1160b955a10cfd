"""In every rank: each training step's starting weights, default-stream state and dropout masks.

At the start of every training forward (the SDK's ``RankObserver``) a step record takes every
parameter (float32, CPU) and ``torch.get_rng_state()``; every ``nn.Dropout`` in training mode
adds ``[module name, output != 0]`` in call order; with ``TRAINFAIL_OBSERVE_AUTOCAST=record``
every module forward adds ``[name, state]`` of the SDK's ``AutocastProbe`` (a CPU autocast
recorded, not applied: megatron-core 0.16.1's layers cannot run one). After
``TRAINFAIL_OBSERVE_STEPS`` optimizer steps: ``rank<R>.pt``, ``{"steps": [{"params", "rng",
"masks"[, "autocast"]}]}``. A claim from the revision's process: the judge redraws every mask
from the README's streams and recomputes every update down to the saved parameters.
"""

from __future__ import annotations

import os
from typing import Any

import torch
from autocast_probe import AutocastProbe  # the harness library's observers
from rank_observer import RankObserver, cpu32, unwrap
from torch import nn
from torch.nn.modules.module import register_module_forward_hook, register_module_forward_pre_hook


class DropoutRecord(RankObserver):
    """Per-step weights, default-stream state and dropout masks of the model's training forwards."""

    def __init__(self, *args: Any, probe: AutocastProbe | None = None) -> None:
        super().__init__(*args)
        self.probe = probe
        self.names: dict[int, str] = {}
        self.records: list[dict[str, Any]] = []
        self.recording = False

    def install(self, *, forward: bool = True, steps: bool = True) -> DropoutRecord:
        super().install(forward=forward, steps=steps)
        register_module_forward_pre_hook(self._any_pre)
        register_module_forward_hook(self._any_post)
        return self

    def on_root_forward(self, module: nn.Module, args: tuple[Any, ...]) -> None:
        model = unwrap(module)
        named = list(model.named_parameters())
        self.recording = bool(named) and model.training and torch.is_grad_enabled()
        if not self.recording:
            return
        self.names = {id(m): n for n, m in model.named_modules()}
        step: dict[str, Any] = {"params": {n: cpu32(p) for n, p in named}, "rng": torch.get_rng_state(), "masks": []}
        if self.probe is not None:
            step["autocast"] = {"modules": []}
        self.records.append(step)

    def on_root_forward_end(self, module: nn.Module, args: tuple[Any, ...], output: Any) -> None:
        self.recording = False

    def _name(self, module: nn.Module) -> str:
        return self.names.get(id(module), f"<unnamed {type(module).__name__}>")

    def _any_pre(self, module: nn.Module, args: tuple[Any, ...]) -> None:
        if self.recording and self.probe is not None:
            self.records[-1]["autocast"]["modules"].append([self._name(module), self.probe.state()])

    def _any_post(self, module: nn.Module, args: tuple[Any, ...], output: Any) -> None:
        if self.recording and isinstance(module, nn.Dropout) and module.training and isinstance(output, torch.Tensor):
            self.records[-1]["masks"].append([self._name(module), (output.detach() != 0).cpu()])

    def on_step_post(self, optimizer: torch.optim.Optimizer, step: int) -> None:
        if step + 1 >= self.steps:
            self.write({"steps": self.records})
            self.records = []


def install() -> None:
    """Start the observer (and the autocast probe where the scenario asks for it) in this rank."""
    probe = AutocastProbe(record_only=("cpu",)) if os.environ.get("TRAINFAIL_OBSERVE_AUTOCAST") == "record" else None
    observer = DropoutRecord.from_env(probe=probe)
    if observer is None:
        return
    if probe is not None:
        probe.install()
    observer.install()
