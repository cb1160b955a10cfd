"""The local runner: each attempt is a worker subprocess, at most ``workers`` at once.

A subprocess per attempt keeps a crashing or killed episode from taking others with it; the
episodes on this node share the device pool through its lock files. A worker that exits
without a result (killed, out of memory) is an infrastructure failure.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from gym_trainfail.batch.layout import RunLayout
from gym_trainfail.batch.plan import PlannedEpisode
from gym_trainfail.batch.worker import RESULT_FILE, AttemptResult
from gym_trainfail.errors import TrainFailError

_POLL_S = 0.1


@dataclass
class _Running:
    episode: str
    attempt: int
    process: subprocess.Popen[bytes]
    log: IO[bytes]
    started: float


class LocalRunner:
    """Worker subprocesses on this machine."""

    name = "local"

    def __init__(self, layout: RunLayout, workers: int) -> None:
        if workers < 1:
            raise TrainFailError(f"workers must be at least 1, got {workers}")
        self.layout = layout
        self.slots = workers
        self._running: list[_Running] = []

    def start(self, planned: PlannedEpisode, attempt: int) -> int | None:
        """Start a worker subprocess for one attempt; its output goes to the attempt's ``worker.log``."""
        folder = self.layout.attempt(planned.id, attempt)
        folder.mkdir(parents=True, exist_ok=True)
        log = (folder / "worker.log").open("wb")
        argv = [sys.executable, "-m", "gym_trainfail.batch.worker", str(self.layout.root), planned.id, str(attempt)]
        process = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT)
        self._running.append(_Running(planned.id, attempt, process, log, time.time()))
        return process.pid

    def wait(self, timeout_s: float) -> list[tuple[str, int, AttemptResult]]:
        """Attempts whose worker exited within ``timeout_s``."""
        deadline = time.monotonic() + timeout_s
        while True:
            ended = [r for r in self._running if r.process.poll() is not None]
            if ended or time.monotonic() >= deadline or not self._running:
                break
            time.sleep(_POLL_S)
        results = []
        for run in ended:
            self._running.remove(run)
            run.log.close()
            results.append((run.episode, run.attempt, self._result(run)))
        return results

    def _result(self, run: _Running) -> AttemptResult:
        path = self.layout.attempt(run.episode, run.attempt) / RESULT_FILE
        if path.exists():
            return read_result(path)
        code = run.process.returncode
        how = f"killed by {signal.Signals(-code).name}" if code < 0 else f"exited with code {code}"
        log = self.layout.attempt(run.episode, run.attempt) / "worker.log"
        return AttemptResult(
            state="infra",
            reason=f"worker {how} before it reported; last output: {_tail(log)}",
            started=run.started,
            ended=time.time(),
            host=socket.gethostname(),
            pid=run.process.pid,
        )

    def close(self) -> None:
        """Stop running workers (terminate, then kill after 20 s)."""
        for run in self._running:
            if run.process.poll() is None:
                run.process.terminate()
        for run in self._running:
            try:
                run.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                run.process.kill()
                run.process.wait()
            run.log.close()
        self._running.clear()


def read_result(path: Path) -> AttemptResult:
    """A worker's result file."""
    return AttemptResult.from_json(json.loads(path.read_text()))


def _tail(log: Path, lines: int = 4) -> str:
    try:
        text = log.read_text(errors="replace").strip().splitlines()
    except OSError:
        return "(no log)"
    return " | ".join(text[-lines:])[-600:] or "(none)"


def default_workers() -> int:
    """Half the cores (each episode's jobs take CPU ranks of their own), at least one."""
    return max(1, (os.cpu_count() or 1) // 2)
