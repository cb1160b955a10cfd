"""Helpers for the batch, Ray and leaderboard tests: a misbehaving agent registered through a
real entry point, and a small echo-case batch."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path
from typing import Any

import pytest

from gym_trainfail.env import TrainFailEnv
from trainfail_agents.scripted import ReferenceAgent

REPO = Path(__file__).resolve().parent.parent


class ChaosAgent(ReferenceAgent):
    """The reference agent, except that on its first attempt (no marker file yet) it does what
    ``mode`` says: ``kill`` its own worker, ``sleep`` for a minute, or ``raise`` after submitting."""

    name = "chaos"

    def __init__(self, marker_dir: str, mode: str = "kill") -> None:
        super().__init__()
        self.marker_dir = Path(marker_dir)
        self.mode = mode

    def play(self, env: TrainFailEnv, observation: str, info: dict[str, Any]) -> float:
        marker = self.marker_dir / f"{Path(info['run_dir']).name}.{self.mode}"
        first = not marker.exists()
        marker.parent.mkdir(parents=True, exist_ok=True)
        with marker.open("a") as handle:  # one line per attempt: the pid that played it
            handle.write(f"{os.getpid()}\n")
        if first and self.mode == "kill":
            os.kill(os.getpid(), signal.SIGKILL)
        if first and self.mode == "sleep":
            time.sleep(60)
        if self.mode == "raise":
            env.step({"tool": "submit", "arguments": {}})
            raise RuntimeError("the agent's own code failed")
        return super().play(env, observation, info)


def register_chaos_agent(site: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Make ``chaos`` an installed agent for this process and every worker it starts."""
    dist = site / "trainfail_test_agents-0.0.dist-info"
    dist.mkdir(parents=True, exist_ok=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: trainfail-test-agents\nVersion: 0.0\n")
    (dist / "entry_points.txt").write_text("[gym_trainfail.agents]\nchaos = tests.batch_support:ChaosAgent\n")
    monkeypatch.syspath_prepend(str(site))
    paths = [str(site), str(REPO), os.environ.get("PYTHONPATH", "")]
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(p for p in paths if p))
