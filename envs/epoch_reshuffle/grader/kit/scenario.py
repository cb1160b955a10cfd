"""One frozen scenario of TrainFail/EpochReshuffle-v1 (public: the run phase reads it too).

The ranks are the scenario's devices; the kit never sets ``run.nproc``, so a pipeline that
counts its ranks anywhere but in the process group is caught on one rank.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from scenario_base import params_base, size_limit  # the harness library


@dataclass(frozen=True)
class Scenario(params_base(Path(__file__).with_name("params.toml"))):
    """Table, batching, epochs, optimizer and the pass threshold (``params.toml``)."""

    def validate(self) -> None:
        if min(self.rows, self.features, self.classes, self.batch_size, self.hidden, self.epochs) < 1:
            raise ValueError("sizes and epochs must be positive")
        if self.steps_per_epoch < 1:
            raise ValueError("a rank's share must hold at least one batch")

    @property
    def ranks(self) -> int:
        return self.devices

    @property
    def share(self) -> int:
        """Indices per rank and epoch (DistributedSampler: tail dropped or topped up)."""
        return self.rows // self.ranks if self.drop_last else -(-self.rows // self.ranks)

    @property
    def steps_per_epoch(self) -> int:
        whole, rest = divmod(self.share, self.batch_size)
        return whole + (1 if rest and not self.drop_last else 0)

    @property
    def steps(self) -> int:
        return self.epochs * self.steps_per_epoch

    @property
    def state_limit_bytes(self) -> int:
        return size_limit((self.features + self.classes + 1) * self.hidden + self.classes, floor=1 << 20)

    @property
    def record_limit_bytes(self) -> int:
        """One rank's record: every window it trained on, with room for a copy."""
        return size_limit(2 * self.epochs * self.share * self.features, bytes_per_value=4, floor=1 << 20)
