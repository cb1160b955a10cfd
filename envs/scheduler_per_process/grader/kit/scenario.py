"""One frozen scenario of TrainFail/SchedulerPerProcess-v1 (public: the run phase reads it too)."""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from scenario_base import ScenarioBase, size_limit  # the harness library

FIXTURE_FLAVORS = ("grader", "prepare")
#: The transformers.get_scheduler names the README supports.
SCHEDULES = ("linear", "cosine", "polynomial", "constant")


@dataclass(frozen=True)
class Scenario(ScenarioBase):
    """Processes, schedule, accumulation, inputs and tolerances of one scenario (defaults: the base)."""

    processes: int = 2
    seed: int = 7
    #: ``grader``: the grader's own generator; ``prepare``: the shipped ``demandnet.prepare`` recipe.
    fixtures: str = "grader"
    #: batches each process reads per epoch (the data is exactly this x processes x batch rows)
    batches_per_process: int = 12
    epochs: int = 1
    per_device_batch_size: int = 8
    gradient_accumulation_steps: int = 1
    lr: float = 0.05
    momentum: float = 0.9
    lr_scheduler_type: str = "linear"
    warmup_steps: int = 4
    scheduler_kwargs: dict[str, Any] = field(default_factory=dict)
    input_dim: int = 12
    hidden_size: int = 48
    output_dim: int = 2
    #: |logged lr - spec lr| <= lr_atol_ratio x peak lr at every update
    lr_atol_ratio: float = 1e-6
    param_atol: float = 1e-5
    loss_rtol: float = 1e-5

    def validate(self) -> None:
        if self.fixtures not in FIXTURE_FLAVORS or self.lr_scheduler_type not in SCHEDULES:
            raise ValueError(f"fixtures {self.fixtures!r} / schedule {self.lr_scheduler_type!r} not supported")
        if min(self.processes, self.batches_per_process, self.epochs, self.per_device_batch_size,
               self.gradient_accumulation_steps) < 1:
            raise ValueError("processes, batches, epochs, batch size and accumulation must be positive")
        if self.processes != self.devices:
            raise ValueError(f"processes={self.processes} but the scenario holds {self.devices} devices")

    @property
    def updates_per_epoch(self) -> int:
        """``U = ceil(batches per process / A)``: the last update of an epoch may take fewer batches."""
        return math.ceil(self.batches_per_process / self.gradient_accumulation_steps)

    @property
    def total_updates(self) -> int:
        return self.updates_per_epoch * self.epochs

    @property
    def rows(self) -> int:
        """Rows of the dataset: whole batches on every process."""
        return self.batches_per_process * self.processes * self.per_device_batch_size

    def window(self, update: int) -> tuple[int, int]:
        """Rows ``[start, end)`` of the file update ``update`` consumes (all processes together)."""
        k = update % self.updates_per_epoch
        per_batch = self.processes * self.per_device_batch_size
        first = k * self.gradient_accumulation_steps
        last = min(first + self.gradient_accumulation_steps, self.batches_per_process)
        return first * per_batch, last * per_batch

    @property
    def state_limit_bytes(self) -> int:
        d, h, o = self.input_dim, self.hidden_size, self.output_dim
        return size_limit((d * h + h) + (h * h + h) + (h * o + o))
