"""Case loading, validation and the registry."""

from __future__ import annotations

import re
from pathlib import Path

import gymnasium
import pytest

import gym_trainfail
from gym_trainfail.cases import load_case
from gym_trainfail.errors import CaseDefinitionError, UnknownCaseError
from gym_trainfail.registry import Registry

from .conftest import ECHO_CASE


def test_echo_fixture_loads(echo_case: gym_trainfail.CaseSpec) -> None:
    assert echo_case.id == "TrainFailTest/Echo-v0"
    assert [s.name for s in echo_case.scenarios] == ["runs", "answer"]
    assert echo_case.scenario("answer").params == {"expect": "42"}
    assert echo_case.wrong_repairs == {"off-by-one-up": ECHO_CASE / "grader" / "wrong_repairs" / "off-by-one-up.patch"}


def _edit(folder: Path, name: str, old: str, new: str) -> None:
    path = folder / name
    text = path.read_text()
    assert old in text, f"fixture changed: {old!r} not in {name}"
    path.write_text(text.replace(old, new))


@pytest.mark.parametrize(
    ("file", "old", "new", "message"),
    [
        (
            "case.toml",
            'id = "TrainFailTest/Echo-v0"',
            'id = "echo"',
            "id: expected 'Namespace/Name-vN'",
        ),
        (
            "case.toml",
            "change what you judge necessary",
            "fix the bug",
            "prompts must be neutral; remove the words ['bug', 'fix']",
        ),
        (
            "case.toml",
            "steps = 40",
            "steps = 0",
            "budgets.steps: expected a positive integer, found 0",
        ),
        (
            "case.toml",
            'judge_command = ["python", "/grader/judge.py"]',
            "judge_command = []",
            "grader.judge_command: expected a command",
        ),
        (
            "case.toml",
            'run_command = ["python", "/kit/run.py"]',
            'command = ["python", "/grader/harness.py"]',
            "grader.command: single-phase graders ran the revision with the harness's powers",
        ),
        (
            "case.toml",
            'run_command = ["python", "/kit/run.py"]',
            'run_command = ["python", "/kit/run.py"]\noracle_comand = ["python", "/grader/oracle.py"]',
            "grader.oracle_comand: unknown key; did you mean 'oracle_command'?",
        ),
        (
            "case.toml",
            "steps = 40",
            "steps = 40\nwall_second = 10",
            "budgets.wall_second: unknown key; did you mean 'wall_seconds'?",
        ),
        (
            "case.toml",
            'run_command = ["python", "/kit/run.py"]',
            'run_command = ["python", "/kit/run.py"]\nkit = "../workspace"',
            "grader.kit '../workspace' must name a folder inside grader/",
        ),
        (
            "case.toml",
            'sources = ["https://example.invalid/test-fixture"]',
            "sources = []",
            "provenance.sources",
        ),
        (
            "case.toml",
            "[topology]\nworld_size = 2",
            "[topology]\nworld_size = 'two'",
            "topology.world_size: expected a positive integer",
        ),
        ("case.toml", "id = ", "id = = ", "not valid TOML"),
        (
            "grader/scenarios.toml",
            'kind = "healthy"',
            'kind = "fine"',
            "kind: expected one of ('healthy', 'failure')",
        ),
        (
            "grader/scenarios.toml",
            'name = "answer"',
            'name = "runs"',
            "scenario names must be unique; repeated: ['runs']",
        ),
        (
            "grader/scenarios.toml",
            'kind = "healthy"',
            'kind = "failure"',
            "at least one healthy control and one failure",
        ),
        (
            "grader/scenarios.toml",
            "devices = 2",
            "devices = -1",
            "scenario[1].devices: expected a positive integer",
        ),
    ],
)
def test_broken_definitions_are_refused_with_reason(
    case_copy: Path, file: str, old: str, new: str, message: str
) -> None:
    _edit(case_copy, file, old, new)
    with pytest.raises(CaseDefinitionError, match=re.escape(message)):
        load_case(case_copy)


@pytest.mark.parametrize("missing", ["grader/reference.patch", "grader/scenarios.toml", "case.toml"])
def test_missing_files_are_refused(case_copy: Path, missing: str) -> None:
    (case_copy / missing).unlink()
    with pytest.raises(CaseDefinitionError, match="docs/case-authoring.md"):
        load_case(case_copy)


def test_registry_refuses_broken_case_and_keeps_the_rest(case_copy: Path, tmp_path: Path) -> None:
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "case.toml").write_text('id = "TrainFail/Broken-v0"\n')
    registry = Registry()
    assert registry.register_quietly(broken) is None
    assert "prompt.text: missing" in registry.refused[str(broken)]
    registry.register(case_copy)
    assert registry.ids() == ["TrainFailTest/Echo-v0"]


def test_unknown_id_suggests_near_names() -> None:
    with pytest.raises(UnknownCaseError, match=r"Did you mean 'TrainFail/DDPTokenAverage-v1'"):
        gym_trainfail.get_case("TrainFail/DDPTokenAvrage-v1")
    with pytest.raises(UnknownCaseError, match="Registered: .*TrainFail/DDPTokenAverage-v1"):
        gym_trainfail.make("Nothing/Like-v9")


def test_registered_cases_are_gymnasium_ids() -> None:
    ids = gym_trainfail.registered_ids()
    assert "TrainFail/DDPTokenAverage-v1" in ids
    for case_id in ids:
        assert gymnasium.spec(case_id).entry_point == "gym_trainfail.env:TrainFailEnv"
    assert not gym_trainfail.default_registry().refused


def test_case_hashes_track_content(case_copy: Path) -> None:
    case = load_case(case_copy)
    grader_before, content_before = case.grader_hash(), case.content_hash()
    (case_copy / "grader" / "judge.py").write_text((case_copy / "grader" / "judge.py").read_text() + "\n# v2\n")
    grader_after, content_after = case.grader_hash(), case.content_hash()
    assert grader_before != grader_after and content_before != content_after
    (case_copy / "workspace" / "report.py").write_text("print(42)\n")
    assert case.grader_hash() == grader_after  # the workspace is not part of the grader
    assert case.content_hash() != content_after
