"""Contract tests over every registered case (Gymnasium's check_env, a seeded rollout, hygiene)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from gymnasium.utils.env_checker import check_env

import gym_trainfail
from gym_trainfail.cases import BUG_VOCABULARY, CaseSpec
from gym_trainfail.env import TrainFailEnv
from gym_trainfail.hashing import walk_tree
from gym_trainfail.qualify import leak_scan
from gym_trainfail.runtimes import Runtime

CASES = [gym_trainfail.get_case(case_id) for case_id in gym_trainfail.registered_ids()]


def test_the_three_in_tree_cases_are_registered() -> None:
    assert {c.id for c in CASES} >= {
        "TrainFail/DDPTokenAverage-v1",
        "TrainFail/TPClipGradNorm-v1",
        "TrainFail/FSDPSourceCoherence-v2",
    }


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_check_env(case: CaseSpec, runtime: Runtime, bwrap_usable: None, tmp_path: Path) -> None:
    env = TrainFailEnv(case=case, sandbox="bwrap", runs_root=tmp_path, grade_on_end=False)
    check_env(env, skip_render_check=True)
    env.close()


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_seeded_rollout_is_deterministic(case: CaseSpec, runtime: Runtime, bwrap_usable: None, tmp_path: Path) -> None:
    actions = [
        {"tool": "list_files", "arguments": {"max_depth": 2}},
        {"tool": "read_file", "arguments": {"path": "README.md", "end_line": 20}},
        {
            "tool": "shell",
            "arguments": {"command": "ls -la | wc -l && python -c 'import torch; print(torch.__version__)'"},
        },
        {"tool": "read_file", "arguments": {"path": "../grader/scenarios.toml"}},
        {"tool": "submit", "arguments": {}},
    ]

    def rollout(root: Path) -> list[str]:
        env = TrainFailEnv(case=case, sandbox="bwrap", runs_root=root, grade_on_end=False)
        first, _ = env.reset(seed=7)
        observations = [first] + [env.step(action)[0] for action in actions]
        _, reward, terminated, _, info = env.step({"tool": "finish", "arguments": {}})
        assert (reward, terminated, info["reward_status"]) == (0.0, True, "deferred")
        env.close()
        return observations

    one, two = rollout(tmp_path / "one"), rollout(tmp_path / "two")
    assert one == two
    assert "2.13.0" in one[3]
    assert one[4].startswith("error: '../grader/scenarios.toml' resolves outside the workspace")


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_agent_facing_text_is_neutral_and_leak_free(case: CaseSpec) -> None:
    assert not BUG_VOCABULARY.search(case.prompt)
    assert leak_scan(case) == []
    specs = json.dumps(TrainFailEnv(case=case, sandbox="process", grade_on_end=False).tool_specs)
    assert not BUG_VOCABULARY.search(specs)
    for rel, path, _ in walk_tree(case.workspace_dir):
        if path.suffix in (".py", ".md", ".yaml", ".sh", ".json", ".toml", ".txt") and path.stat().st_size < 1 << 20:
            found = BUG_VOCABULARY.findall(path.read_text(errors="replace"))
            hints = [w for w in found if w.lower() in ("bug", "bugs", "buggy", "broken", "wrong", "incorrect")]
            assert not hints, f"{rel} hints at the failure: {hints}"
