"""What the driver needs from a place that runs attempts: a local process pool or a Ray cluster."""

from __future__ import annotations

from typing import Protocol

from gym_trainfail.batch.plan import PlannedEpisode
from gym_trainfail.batch.worker import AttemptResult


class Runner(Protocol):
    """Runs attempts of planned episodes, ``slots`` at a time, and reports them as they end."""

    name: str
    slots: int

    def start(self, planned: PlannedEpisode, attempt: int) -> int | None:
        """Start one attempt; returns the worker's process id when it is known."""
        ...

    def wait(self, timeout_s: float) -> list[tuple[str, int, AttemptResult]]:
        """Attempts that ended within ``timeout_s``: (episode id, attempt number, result)."""
        ...

    def close(self) -> None:
        """Stop whatever still runs and release the runner's resources."""
        ...
