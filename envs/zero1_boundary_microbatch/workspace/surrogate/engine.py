"""Our DeepSpeed engine: DeepSpeed's own, plus the wall time of each step's gradient reduction.

We watch how long the cross-rank gradient reduction takes at every optimizer step (it is the
part of a step that grows with the number of ranks), and DeepSpeed's timers only report it in
aggregate through its logger. ``ReduceTimedEngine`` times it where it happens, in the engine's
backward epilogue, and ``train.py`` logs it per step as ``reduce_ms``.

``deepspeed.initialize`` takes no engine class, so ``initialize`` below builds the engine the way
``deepspeed.initialize`` does for a plain (non-pipeline) module.
"""
from __future__ import annotations

import time
from typing import Any

import torch
from deepspeed.runtime import engine as ds_engine
from deepspeed.runtime.base_optimizer import ZeROOptimizer
from deepspeed.runtime.config import DeepSpeedConfig
from deepspeed.runtime.engine import DeepSpeedEngine


class ReduceTimedEngine(DeepSpeedEngine):  # type: ignore[misc]
    """A DeepSpeedEngine that accumulates the seconds spent in gradient reduction."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.reduce_seconds = 0.0

    def _backward_epilogue(self) -> None:
        # DeepSpeed's epilogue: all-reduce the gradients (at the accumulation boundary), then let
        # a ZeRO optimizer finish its backward bookkeeping; the reduction is timed.
        self._stop_timers(self.engine_timers.backward_inner_timers)
        self._start_timers(self.engine_timers.backward_reduce_timers)

        if self.enable_backward_allreduce and not self.inside_no_sync_ctxt:
            start = time.perf_counter()
            self.allreduce_gradients()
            if self.is_gradient_accumulation_boundary():
                self.reduce_seconds += time.perf_counter() - start

        if isinstance(self.optimizer, ZeROOptimizer):
            self.optimizer.backward_epilogue()
            self.optimizer.exit_backward()

        if self.is_deepcompile_active() and not self.uses_parallelization_pass_only():
            ds_engine.deepcompile_backward_epilogue()

        self._stop_timers(self.engine_timers.backward_reduce_timers)
        self._stop_timers(self.engine_timers.backward_timers)

    def take_reduce_seconds(self) -> float:
        """Seconds of gradient reduction since the last call."""
        seconds, self.reduce_seconds = self.reduce_seconds, 0.0
        return seconds


def initialize(model: torch.nn.Module, optimizer: torch.optim.Optimizer, config: dict[str, Any]) -> ReduceTimedEngine:
    """``deepspeed.initialize(model=..., optimizer=..., config=...)``, building our engine."""
    config_class = DeepSpeedConfig(config)
    engine = ReduceTimedEngine(args=None, model=model, optimizer=optimizer, config=config,
                               config_class=config_class)
    engine._configure_python_gc()
    return engine
