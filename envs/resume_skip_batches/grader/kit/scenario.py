"""One frozen scenario of TrainFail/ResumeSkipBatches-v1 (public: the run phase reads it too).

Defaults are ``configs/base.yaml``'s values; a scenario's ``[scenario.params]`` overrides them
by name. Ranks are the scenario's devices: the run kit never sets ``launch.nproc``, so a
pipeline that takes its rank count from anywhere but the process group is caught on one rank.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path

from scenario_base import params_base, size_limit  # the harness library

#: ``grader``: the grader's own generator; ``prepare``: the shipped ``fcast.prepare`` recipe.
FIXTURES = ("grader", "prepare")


@dataclass(frozen=True)
class Scenario(params_base(Path(__file__).with_name("params.toml"))):
    """Table, model, schedule, the steps a run is stopped after, and the pass threshold
    (``params.toml``: the base scenario)."""

    def validate(self) -> None:
        object.__setattr__(self, "interrupts", tuple(int(k) for k in self.interrupts))
        if self.fixtures not in FIXTURES:
            raise ValueError(f"fixtures must be one of {FIXTURES}, not {self.fixtures!r}")
        stops = [0, *self.interrupts, self.max_steps]
        if any(b <= a for a, b in pairwise(stops)):
            raise ValueError(f"interrupts {self.interrupts} must rise strictly inside (0, {self.max_steps})")
        if min(self.micro_batch_size, self.accumulation, self.save_steps) < 1 or self.updates_per_epoch < 1:
            raise ValueError("a rank's shard must fill at least one accumulation window")

    @property
    def ranks(self) -> int:
        return self.devices

    @property
    def micro_batches_per_rank(self) -> int:
        """``len(loader)``: DistributedSampler and DataLoader both drop the rest (``drop_last``)."""
        return (self.rows // self.ranks) // self.micro_batch_size

    @property
    def updates_per_epoch(self) -> int:
        """Whole accumulation windows of a rank's shard; leftover micro-batches are not used."""
        return self.micro_batches_per_rank // self.accumulation

    @property
    def segments(self) -> list[tuple[int, int]]:
        """``(steps done before, steps done after)`` each launch: (0, K1), (K1, K2), ..."""
        return list(pairwise([0, *self.interrupts, self.max_steps]))

    @property
    def state_limit_bytes(self) -> int:
        return size_limit(self.input_dim * self.hidden_size + 2 * self.hidden_size + 1, floor=1 << 20)

    @property
    def record_limit_bytes(self) -> int:
        """One rank's record of one launch: every micro-batch of the whole run, twice."""
        return size_limit(2 * self.max_steps * self.accumulation * self.micro_batch_size * self.input_dim,
                          bytes_per_value=4, floor=1 << 20)  # fmt: skip
