"""What an episode's records show about how the agent worked: its statements, the source
locations it read, the jobs it ran and its completed model turns.

Everything comes from host-written files (the ledger and the transcript); nothing a sandbox
wrote is read except as the observation text the agent itself was shown.
"""

from __future__ import annotations

import bisect
import posixpath
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gym_trainfail.diagnosis.rubric import Culprit
from gym_trainfail.diagnosis.symptoms import Job
from gym_trainfail.env import read_transcript
from gym_trainfail.ledger import Event, iter_kind

#: Tools whose ``path`` argument names a workspace file.
PATH_TOOLS = ("read_file", "edit_file", "write_file")
#: Tools whose ``command`` argument runs in the sandbox.
COMMAND_TOOLS = ("shell", "run_job")
WORKSPACE_PREFIXES = ("/workspace/", "./")


@dataclass(frozen=True)
class Statement:
    """Something the agent said: an assistant message, a reasoning summary or its finish summary."""

    t: float
    text: str
    source: str


@dataclass(frozen=True)
class Step:
    """A finished step with its recorded arguments and the observation it returned."""

    index: int
    tool: str
    start: float
    end: float
    arguments: Mapping[str, Any]
    observation: str


@dataclass(frozen=True)
class Evidence:
    """An episode's statements, steps and turns, in time order."""

    start: float
    statements: tuple[Statement, ...]
    steps: tuple[Step, ...]
    #: (time, cumulative input + output tokens) after each completed model turn.
    turns: tuple[tuple[float, int], ...]

    def jobs(self) -> list[Job]:
        """The ``run_job`` steps."""
        return [
            Job(
                s.index,
                str(s.arguments.get("command", "")),
                s.observation,
                s.start,
                s.end,
                _int(s.arguments.get("devices")),
            )  # fmt: skip
            for s in self.steps
            if s.tool == "run_job"
        ]

    def turn_at(self, t: float) -> int:
        """Completed model turns at time ``t`` (the turn in progress then is this one)."""
        return bisect.bisect_right([at for at, _ in self.turns], t)

    def token_range(self, t: float) -> tuple[int, int]:
        """Tokens through the turn before the one in progress at ``t``, and through that turn:
        the bounds completed-turn counters give (never interpolated)."""
        turn = self.turn_at(t)
        high = self.turns[turn - 1][1] if turn else 0
        low = self.turns[turn - 2][1] if turn > 1 else 0
        return low, high

    def steps_before(self, t: float) -> int:
        return sum(1 for s in self.steps if s.end <= t)


def collect(run_dir: Path, events: Sequence[Event]) -> Evidence:
    """The evidence of the episode in ``run_dir`` (its ledger events given)."""
    resets = [float(e["t"]) for e in iter_kind(events, "reset")]
    start = resets[0] if resets else (float(events[0]["t"]) if events else 0.0)
    observations = {int(r["index"]): str(r.get("observation") or "") for r in read_transcript(run_dir)}
    statements: list[Statement] = []
    steps: list[Step] = []
    turns: list[tuple[float, int]] = []
    total = 0
    for e in events:
        kind = e.get("event")
        if kind == "message" and e.get("role") == "assistant" and isinstance(e.get("text"), str):
            statements.append(Statement(float(e["t"]), e["text"], str(e.get("kind", "message"))))
        elif kind == "finish" and isinstance(e.get("summary"), str) and e["summary"].strip():
            statements.append(Statement(float(e["t"]), e["summary"], "finish"))
        elif kind == "tokens":
            total += _int(e.get("input")) + _int(e.get("output"))
            turns.append((float(e["t"]), total))
        elif kind == "step" and isinstance(e.get("index"), int):
            arguments = e["arguments"] if isinstance(e.get("arguments"), Mapping) else {}
            began, ended = _time(e.get("start"), e["t"]), _time(e.get("end"), e["t"])
            shown = observations.get(e["index"], "")
            steps.append(Step(e["index"], str(e.get("tool")), began, ended, arguments, shown))
    return Evidence(start, tuple(statements), tuple(steps), tuple(turns))


def culprit_reads(evidence: Evidence, culprits: Sequence[Culprit]) -> list[tuple[Step, Culprit]]:
    """Steps that showed the agent a culprit location, through any tool: a file tool on the
    culprit's file, a command naming its file, or output quoting one of its symbols."""
    found = []
    for step in evidence.steps:
        for culprit in culprits:
            if _shows(step, culprit):
                found.append((step, culprit))
                break
    return found


def _shows(step: Step, culprit: Culprit) -> bool:
    if step.tool in PATH_TOOLS:
        return _normal(str(step.arguments.get("path", ""))) == culprit.path
    if step.tool in COMMAND_TOOLS:
        command = str(step.arguments.get("command", ""))
        if culprit.path in command or posixpath.basename(culprit.path) in command:
            return True
    return any(symbol in step.observation for symbol in culprit.symbols)


def _normal(path: str) -> str:
    for prefix in WORKSPACE_PREFIXES:
        if path.startswith(prefix):
            path = path[len(prefix) :]
    return posixpath.normpath(path)


def _time(value: object, default: object) -> float:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else float(str(default))


def _int(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0
