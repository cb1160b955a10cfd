"""Play one attempt of one planned episode in this process, and say whose failure it was.

Local workers run this module as a subprocess (``python -m gym_trainfail.batch.worker``), Ray
tasks call :func:`execute_attempt` directly. Either way the episode runs in its own
Docker/bwrap sandbox on the node that holds the worker, and shares the node's device pool.
"""

from __future__ import annotations

import argparse
import os
import socket
import sys
import threading
import time
import traceback
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from gym_trainfail.agent import load_agent
from gym_trainfail.batch.layout import RunLayout
from gym_trainfail.batch.plan import PlannedEpisode, load_plan
from gym_trainfail.batch.status import AttemptState
from gym_trainfail.episode import run_episode
from gym_trainfail.errors import (
    GradingError,
    RuntimeMissingError,
    SandboxLostError,
    SandboxUnavailableError,
)
from gym_trainfail.files import write_json
from gym_trainfail.ledger import iter_kind, read_events

#: Failures of the machinery, not of the agent: retried, never counted against it.
INFRA_ERRORS: tuple[type[BaseException], ...] = (
    SandboxUnavailableError,
    SandboxLostError,
    RuntimeMissingError,
    GradingError,
    OSError,
    MemoryError,
)
#: Ledger ``finish`` reasons that mean the sandbox, not the agent, ended the episode.
INFRA_FINISH_REASONS = ("sandbox-lost",)
RESULT_FILE = "result.json"


@dataclass(frozen=True)
class AttemptResult:
    """How one attempt ended, as the worker saw it."""

    state: AttemptState
    reason: str
    started: float
    ended: float
    host: str
    pid: int

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> AttemptResult:
        return cls(**data)


def execute_attempt(
    planned: PlannedEpisode, run_dir: Path, *, sandbox: str, agent_options: Mapping[str, Any] | None = None
) -> AttemptResult:
    """Play ``planned`` into the new run directory ``run_dir`` (episodes are graded later)."""
    started = time.time()
    options = dict(agent_options or {})
    try:
        agent = load_agent(planned.agent, **options)
        run_episode(
            agent,
            case=planned.case_spec(),
            arm=planned.arm,
            sandbox=sandbox,
            run_dir=run_dir,
            seed=planned.seed,
            grade_on_end=False,
            agent_options=options,
        )
        state, reason = _judge_finished(run_dir)
    except INFRA_ERRORS as exc:
        state, reason = "infra", f"{type(exc).__name__}: {exc}"
    except Exception as exc:  # noqa: BLE001 - the agent's own code failed: its episode still counts
        state, reason = ("agent-error" if _reset_happened(run_dir) else "infra"), _describe(exc)
    return AttemptResult(state, reason[:2000], started, time.time(), socket.gethostname(), os.getpid())


def _judge_finished(run_dir: Path) -> tuple[AttemptState, str]:
    events = read_events(run_dir / "ledger.jsonl")
    finishes = [str(e.get("reason", "")) for e in iter_kind(events, "finish")]
    lost = [r for r in finishes if r in INFRA_FINISH_REASONS]
    if lost:
        return "infra", f"the episode ended because its sandbox was lost ({lost[0]})"
    return "done", finishes[0] if finishes else ""


def _reset_happened(run_dir: Path) -> bool:
    """An exception before the episode started (no ledger yet) is the machinery's, not the agent's."""
    return (run_dir / "ledger.jsonl").exists()


def _describe(exc: BaseException) -> str:
    tail = traceback.format_exception(exc)[-6:]
    return f"{type(exc).__name__}: {exc}\n" + "".join(tail)


def _exit_with_parent() -> None:
    """Stop when the driver dies, so no orphan plays an episode a new driver will retry."""
    parent = os.getppid()

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(1.0)
        os._exit(70)

    threading.Thread(target=watch, name="parent-watch", daemon=True).start()


def main(argv: list[str] | None = None) -> int:
    """``python -m gym_trainfail.batch.worker RUN_DIR EPISODE ATTEMPT``: play one attempt and
    write its result into the attempt's folder."""
    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("run_dir", type=Path)
    parser.add_argument("episode")
    parser.add_argument("attempt", type=int)
    args = parser.parse_args(argv)
    _exit_with_parent()
    layout = RunLayout(args.run_dir)
    plan = load_plan(layout)
    planned = plan.episode(args.episode)
    result = execute_attempt(
        planned,
        layout.episode(planned.id),
        sandbox=plan.spec.sandbox,
        agent_options=plan.spec.agent_options.get(planned.agent),
    )
    write_json(layout.attempt(planned.id, args.attempt) / RESULT_FILE, result.to_json())
    return 0


if __name__ == "__main__":
    sys.exit(main())
