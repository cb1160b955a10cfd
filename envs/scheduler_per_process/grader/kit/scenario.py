"""One frozen scenario of TrainFail/SchedulerPerProcess-v1 (public: the run phase reads it too)."""
from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

from scenario_base import params_base, size_limit  # the harness library

FIXTURE_FLAVORS = ("grader", "prepare")
#: The transformers.get_scheduler names the README supports.
SCHEDULES = ("linear", "cosine", "polynomial", "constant")


@dataclass(frozen=True)
class Scenario(params_base(Path(__file__).with_name("params.toml"))):
    """Processes, schedule, accumulation, inputs and tolerances of one scenario (``params.toml``: the base)."""

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
