"""The runner's bookkeeping: each episode's attempts, one JSON file per episode.

Only the driver writes these files (atomically), so a crash of the runner leaves every
recorded attempt intact. An attempt still marked ``running`` when a new driver starts was cut
short by a crash: it is adopted if its worker left a result, else counted as an
infrastructure failure. Infrastructure failures are retried up to the plan's limit and are
never counted as the agent's: an episode that runs out of attempts is ``gave-up`` and is left
out of every rate.
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass, replace
from typing import Any, Literal

from gym_trainfail.batch.layout import RunLayout
from gym_trainfail.files import write_json

#: ``done``: the agent played to the end; ``agent-error``: the agent's code raised (the episode
#: still counts, with what it submitted); ``infra``: not the agent's doing, retried;
#: ``cancelled``: the operator stopped the batch (run again, not counted as a failure).
AttemptState = Literal["running", "done", "agent-error", "infra", "cancelled"]
EpisodeState = Literal["pending", "running", "done", "gave-up"]
COUNTED: tuple[AttemptState, ...] = ("done", "agent-error")


@dataclass(frozen=True)
class Attempt:
    """One try at playing an episode."""

    number: int
    state: AttemptState
    started: float
    ended: float | None = None
    reason: str = ""
    runner: str = "local"
    host: str = ""
    pid: int | None = None
    #: Seconds from the worker starting the episode to its end (what episode overhead is cut from).
    worker_seconds: float | None = None

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class EpisodeStatus:
    """Every attempt of one episode, oldest first."""

    episode: str
    attempts: tuple[Attempt, ...] = ()

    def state(self, max_attempts: int) -> EpisodeState:
        """Where the episode stands under a limit of ``max_attempts``."""
        if not self.attempts:
            return "pending"
        last = self.attempts[-1]
        if last.state in COUNTED:
            return "done"
        if last.state == "running":
            return "running"
        return "gave-up" if self.infra_failures >= max_attempts else "pending"

    @property
    def infra_failures(self) -> int:
        return sum(a.state == "infra" for a in self.attempts)

    @property
    def final(self) -> Attempt | None:
        """The attempt that counts (the last one, when it finished)."""
        last = self.attempts[-1] if self.attempts else None
        return last if last is not None and last.state in COUNTED else None

    def with_attempt(self, attempt: Attempt) -> EpisodeStatus:
        """This status with ``attempt`` added, or replacing the attempt of the same number."""
        kept = tuple(a for a in self.attempts if a.number != attempt.number)
        return replace(self, attempts=(*kept, attempt))

    def to_json(self) -> dict[str, Any]:
        return {"episode": self.episode, "attempts": [a.to_json() for a in self.attempts]}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> EpisodeStatus:
        return cls(episode=data["episode"], attempts=tuple(Attempt(**a) for a in data["attempts"]))


def read_status(layout: RunLayout, episode: str) -> EpisodeStatus:
    """The recorded attempts of ``episode`` (none when it never started)."""
    path = layout.status(episode)
    if not path.exists():
        return EpisodeStatus(episode)
    return EpisodeStatus.from_json(json.loads(path.read_text()))


def write_status(layout: RunLayout, status: EpisodeStatus) -> None:
    write_json(layout.status(status.episode), status.to_json())


def interrupted(attempt: Attempt) -> Attempt:
    """A ``running`` attempt whose driver died before it reported: an infrastructure failure."""
    return replace(
        attempt,
        state="infra",
        ended=time.time(),
        reason="interrupted: the runner or its worker was killed before the attempt reported",
    )
