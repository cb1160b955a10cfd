"""One frozen scenario of TrainFail/DDPTokenAverage-v1 (public: the run phase reads it too).

Defaults are ``configs/sft_tiny.yaml``'s training values; the records are drawn by the grader from
a recipe (``sftdata.py``). ``architecture`` is the width: ``tiny`` (``configs/neox_tiny.json``, the
default scale) or ``gpu`` (``configs/neox_gpu.json``, profile ``native``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

from scenario_base import params_base, size_limit  # the harness library

#: The widths a scenario may train, and their parameter counts (GPT-NeoX, untied embeddings).
ARCHITECTURES = {"tiny": 25_344, "gpu": 3_225_088}
RECIPES = ("bimodal", "ragged", "equal", "leading")
SCHEDULES = ("cosine", "linear")


@dataclass(frozen=True)
class Scenario(params_base(Path(__file__).with_name("params.toml"))):
    """Ranks, batches, accumulation, clipping, optimizer schedule, records and width (``params.toml``:
    the base scenario)."""

    def validate(self) -> None:
        counts = (self.world_size, self.grad_accum, self.per_device_batch_size, self.steps, self.records)
        if any(isinstance(n, bool) or not isinstance(n, int) or n < 1 for n in counts) or self.warmup_steps < 0:
            raise ValueError(f"scenario {self.name}: ranks, accumulation, batch, steps and records must be positive")
        if self.world_size != self.devices or self.records % (self.world_size * self.per_device_batch_size):
            raise ValueError(f"scenario {self.name}: world_size must be the devices, records whole batches on each")
        if not (math.isfinite(self.max_grad_norm) and self.max_grad_norm >= 0):
            raise ValueError(f"scenario {self.name}: max_grad_norm must be >= 0, found {self.max_grad_norm}")
        if (self.recipe, self.lr_scheduler_type, self.architecture) not in (
            (r, s, a) for r in RECIPES for s in SCHEDULES for a in ARCHITECTURES
        ):
            raise ValueError(f"scenario {self.name}: recipe, schedule or architecture not one of "
                             f"{RECIPES}, {SCHEDULES}, {tuple(ARCHITECTURES)}")  # fmt: skip

    @property
    def record_limit_bytes(self) -> int:
        """A rank's record: parameters and gradients of every update and the final parameters."""
        return size_limit(ARCHITECTURES[self.architecture] * (2 * self.steps + 1))

    @property
    def batches_per_epoch(self) -> int:
        """Micro-batches each rank reads per epoch (whole batches: ``validate``)."""
        return self.records // (self.world_size * self.per_device_batch_size)

    def micro_batches(self, update: int) -> int:
        """Micro-batches in update ``update``'s window: the Trainer cuts an epoch's last window short."""
        per_epoch = math.ceil(self.batches_per_epoch / self.grad_accum)
        last = self.batches_per_epoch - self.grad_accum * (per_epoch - 1)
        return self.grad_accum if update % per_epoch < per_epoch - 1 else last

    def rows(self, update: int) -> int:
        """Distinct records update ``update`` consumes over every rank."""
        return self.micro_batches(update) * self.per_device_batch_size * self.world_size
