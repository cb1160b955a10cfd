"""One scenario of TrainFail/TPReplicaClipDrift-v1, as both phases parse it (nothing private)."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from scenario_base import params_base, size_limit  # the harness library

RECIPES = ("grader", "prepare")
#: Names the workspace README partitions across tensor-parallel ranks, and along which dim.
PARTITIONED = (("mlp.fc1.weight", 0), ("mlp.fc1.bias", 0), ("mlp.fc2.weight", 1))


def partition_dim(name: str) -> int | None:
    """The README's layout table: a partitioned parameter's dim, None for a replicated one."""
    return next((dim for suffix, dim in PARTITIONED if name.endswith(suffix)), None)


@dataclass(frozen=True)
class Scenario(params_base(Path(__file__).with_name("params.toml"))):
    """What the run is told (README keys), what it starts from, and how close it must come
    (``params.toml``: the base scenario)."""

    def validate(self) -> None:
        if self.fixtures not in RECIPES or self.zero_stage not in (1, 2):
            raise ValueError(f"fixtures={self.fixtures!r}, zero_stage={self.zero_stage}: not supported")
        if self.tp != self.devices or self.ffn_hidden_size % self.tp:
            raise ValueError(f"tp={self.tp} on {self.devices} devices with ffn_hidden_size={self.ffn_hidden_size}")
        if min(self.steps, self.batch_size, self.full_record_every) < 1 or 0 < self.rows < self.batch_size:
            raise ValueError(f"steps={self.steps}, batch_size={self.batch_size}, rows={self.rows}, "
                             f"full_record_every={self.full_record_every}")

    @property
    def samples(self) -> int:
        return self.rows if self.rows else self.steps * self.batch_size

    def sample_index(self, iteration: int) -> list[int]:
        """The samples iteration ``iteration`` consumes (file order, wrapping around)."""
        first = iteration * self.batch_size
        return [(first + k) % self.samples for k in range(self.batch_size)]

    def records_full(self, step: int) -> bool:
        """Whether the observer copies partitioned parameters too at the start of ``step``."""
        return step % self.full_record_every == 0 or step == self.steps - 1

    def _counts(self) -> tuple[int, int]:
        """(all parameters, replicated ones) of the full model."""
        h, f, layers = self.hidden_size, self.ffn_hidden_size, self.num_layers
        replicated = (self.input_dim + 1) * h + layers * 3 * h + 2 * h + (h + 1) * self.output_dim
        return replicated + layers * (2 * h * f + f), replicated

    @property
    def state_limit_bytes(self) -> int:
        return size_limit(self._counts()[0], floor=64 << 20)

    @property
    def record_limit_bytes(self) -> int:
        """One rank's observer record: float32 copies of every recorded tensor, doubled."""
        everything, replicated = self._counts()
        full = sum(self.records_full(k) for k in range(self.steps))
        return size_limit(full * everything + (self.steps - full) * replicated, floor=64 << 20)
