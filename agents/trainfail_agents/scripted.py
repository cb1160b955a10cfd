"""Scripted agents: ``noop`` (a baseline that changes nothing), ``reference`` and ``study``.

``reference`` is privileged: it reads the case's private reference repair on the host and
applies it through the env's ordinary tools (read, write, run a job, submit), so an episode
it plays exercises the same paths a model's would. ``study`` is privileged the same way and
behaves like the agents of the study this gym extends: it reads the culprit source, states a
hypothesis, runs a probe job that shows the symptom, confirms the mechanism, submits a
plausible wrong repair, then the right one — from the case's private rubric
(``grader/diagnosis/rubric.toml``, its ``[study]`` table). It reports estimated token usage per
action (what it read and wrote, as a conversation would grow), so every cost column holds
values. They exist for qualification, demos, tests and the scripted leaderboard, never for
leaderboards of real agents.
"""

from __future__ import annotations

import filecmp
import json
import shutil
import tempfile
from pathlib import Path
from typing import Any, cast

from gym_trainfail.env import TrainFailEnv
from gym_trainfail.errors import TrainFailError
from gym_trainfail.files import apply_patch
from gym_trainfail.hashing import walk_tree
from gym_trainfail.revisions import ALWAYS_EXCLUDED


def _act(env: TrainFailEnv, tool: str, **arguments: Any) -> tuple[str, float, bool]:
    observation, reward, terminated, truncated, _ = env.step(json.dumps({"tool": tool, "arguments": arguments}))
    return observation, float(reward), terminated or truncated


#: Characters per token of the study agent's usage estimate (as the fake endpoint counts).
CHARS_PER_TOKEN = 4


class NoopAgent:
    """Looks around, submits the workspace unchanged and finishes."""

    name = "noop"

    def play(self, env: TrainFailEnv, observation: str, info: dict[str, Any]) -> float:
        for tool, args in (
            ("list_files", {}),
            ("submit", {}),
            ("finish", {"summary": "no changes"}),
        ):
            _, reward, done = _act(env, tool, **args)
            if done:
                return reward
        return 0.0


class ReferenceAgent:
    """Applies the case's private reference repair through the env's tools."""

    name = "reference"

    def __init__(self, check: bool = True) -> None:
        self.check = check

    def play(self, env: TrainFailEnv, observation: str, info: dict[str, Any]) -> float:
        case = cast(TrainFailEnv, env.unwrapped).case
        steps: list[tuple[str, dict[str, Any]]] = [("list_files", {})]
        for path, content in patched_files(case.workspace_dir, case.reference_patch).items():
            steps.append(("read_file", {"path": path}))
            if content is None:
                steps.append(("shell", {"command": f"rm -f -- '{path}'"}))
            else:
                steps.append(("write_file", {"path": path, "content": content}))
        if self.check and case.check_command:
            steps.append(
                (
                    "run_job",
                    {"command": case.check_command, "devices": case.topology.devices_per_job},
                )
            )
        steps += [("submit", {}), ("finish", {"summary": "applied the reference repair"})]
        for tool, args in steps:
            _, reward, done = _act(env, tool, **args)
            if done:
                return reward
        return 0.0


class StudyAgent:
    """Reads, hypothesises, probes, confirms, submits a wrong repair, then the right one."""

    name = "study"

    def play(self, env: TrainFailEnv, observation: str, info: dict[str, Any]) -> float:
        inner = cast(TrainFailEnv, env.unwrapped)
        case = inner.case
        rubric = case.rubric
        if rubric is None or rubric.study is None:
            raise TrainFailError(f"the study agent needs a [study] table in {case.id}'s grader/diagnosis/rubric.toml")
        study = rubric.study
        devices = case.topology.devices_per_job
        wrong = patched_files(case.workspace_dir, case.wrong_repairs[study.wrong_repair])
        right = patched_files(case.workspace_dir, case.reference_patch)
        pristine = {rel: _text(case.workspace_dir / rel) for rel in wrong if rel not in right}
        talk = _Talk(inner, observation)
        plan: list[tuple[str, dict[str, Any]] | str] = [("list_files", {}), ("read_file", {"path": "README.md"})]
        plan += [("read_file", {"path": c.path}) for c in rubric.culprits]
        plan += [study.hypothesis]
        plan += [("write_file", {"path": study.probe_path, "content": study.probe.read_text(encoding="utf-8")}),
                 ("run_job", {"command": study.probe_command, "devices": devices}),
                 study.confirmation,
                 ("shell", {"command": f"rm -f -- '{study.probe_path}'"})]  # fmt: skip
        plan += _writes(wrong) + [("submit", {})]
        plan += _writes({**pristine, **right})
        if case.check_command:
            plan.append(("run_job", {"command": case.check_command, "devices": devices}))
        plan += [("submit", {}), ("finish", {"summary": study.confirmation})]
        for item in plan:
            if isinstance(item, str):
                talk.say(item)
                continue
            _, reward, done = talk.act(*item)
            if done:
                return reward
        return 0.0


class _Talk:
    """The study agent's turns: each action or statement is one model turn whose estimated usage
    (the conversation so far in, the action out) is reported before it takes effect."""

    def __init__(self, env: TrainFailEnv, observation: str) -> None:
        self.env = env
        self.context = len(observation)

    def _turn(self, output: str) -> None:
        self.env.record_usage(self.context // CHARS_PER_TOKEN, max(1, len(output) // CHARS_PER_TOKEN), estimated=True)
        self.context += len(output)

    def say(self, text: str) -> None:
        self._turn(text)
        self.env.record_message(text)

    def act(self, tool: str, arguments: dict[str, Any]) -> tuple[str, float, bool]:
        action = json.dumps({"tool": tool, "arguments": arguments})
        self._turn(action)
        observation, reward, done = _act(self.env, tool, **arguments)
        self.context += len(observation)
        return observation, reward, done


def _writes(files: dict[str, str | None]) -> list[tuple[str, dict[str, Any]] | str]:
    return [
        ("write_file", {"path": rel, "content": content}) if content is not None
        else ("shell", {"command": f"rm -f -- '{rel}'"})
        for rel, content in files.items()
    ]  # fmt: skip


def _text(path: Path) -> str | None:
    return path.read_text(encoding="utf-8") if path.is_file() else None


def patched_files(workspace: Path, patch: Path) -> dict[str, str | None]:
    """Files ``patch`` changes in ``workspace``: path -> new text (``None`` when deleted)."""
    with tempfile.TemporaryDirectory(prefix="trainfail-reference-") as scratch:
        repaired = Path(scratch) / "workspace"
        shutil.copytree(workspace, repaired, symlinks=True)
        apply_patch(repaired, patch)
        before = {rel for rel, _, _ in walk_tree(workspace, exclude=ALWAYS_EXCLUDED)}
        after = {rel for rel, _, _ in walk_tree(repaired, exclude=ALWAYS_EXCLUDED)}
        changed: dict[str, str | None] = {}
        for rel in sorted(after):
            if rel not in before or not filecmp.cmp(workspace / rel, repaired / rel, shallow=False):
                changed[rel] = (repaired / rel).read_text(encoding="utf-8")
        for rel in sorted(before - after):
            changed[rel] = None
        return changed
