"""Scripted agents: ``noop`` (a baseline that changes nothing) and ``reference``.

``reference`` is privileged: it reads the case's private reference repair on the host and
applies it through the env's ordinary tools (read, write, run a job, submit), so an episode
it plays exercises the same paths a model's would. It exists for qualification, demos and
tests, never for leaderboards of real agents.
"""

from __future__ import annotations

import filecmp
import json
import shutil
import tempfile
from pathlib import Path
from typing import Any, cast

from gym_trainfail.env import TrainFailEnv
from gym_trainfail.grading import apply_patch
from gym_trainfail.hashing import walk_tree
from gym_trainfail.revisions import ALWAYS_EXCLUDED


def _act(env: TrainFailEnv, tool: str, **arguments: Any) -> tuple[str, float, bool]:
    observation, reward, terminated, truncated, _ = env.step(json.dumps({"tool": tool, "arguments": arguments}))
    return observation, float(reward), terminated or truncated


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
        for path, content in self._repaired_files(case.workspace_dir, case.reference_patch).items():
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

    @staticmethod
    def _repaired_files(workspace: Path, patch: Path) -> dict[str, str | None]:
        """Files the reference patch changes: path -> new text (``None`` when deleted)."""
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
