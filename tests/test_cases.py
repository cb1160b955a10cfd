"""Case loading, validation and the registry."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import gymnasium
import pytest

import gym_trainfail
from gym_trainfail import registry as registry_module
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


def test_importing_the_package_validates_no_case_until_one_is_asked_for() -> None:
    """The import registers every id with Gymnasium from case.toml alone; asking for a case validates that
    case only (its rubric parsed), and the full registry is built when something needs every case."""
    code = (
        "import gymnasium, gym_trainfail\n"
        "from gym_trainfail import registry\n"
        "from gym_trainfail.cases import load_case\n"
        "assert registry.default_registry.cache_info().currsize == 0\n"
        "ids = sorted(i for i in gymnasium.registry if i.startswith('TrainFail/'))\n"
        "case = gym_trainfail.get_case('TrainFail/DDPTokenAverage-v1')\n"
        "assert case.rubric is not None and case == load_case(case.root)\n"
        "assert gym_trainfail.get_case('TrainFail/DDPTokenAverage-v1') is case\n"
        "assert registry.default_registry.cache_info().currsize == 0\n"
        "assert ids == gym_trainfail.registered_ids(), ids\n"
        "print(len(ids))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr
    assert int(result.stdout) >= 11


@pytest.fixture
def discovered(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[Path]:
    """A folder the process-wide discovery reads instead of the in-tree cases (caches cleared both ways, and the
    Gymnasium ids the test registered removed, so later tests in this process see the in-tree cases only)."""
    folder = tmp_path / "envs"
    folder.mkdir()
    monkeypatch.setattr(registry_module, "builtin_cases_dir", lambda: folder)
    caches = (registry_module.default_registry, registry_module._declared_folders, registry_module._load_declared)
    known = set(gymnasium.registry)
    for cache in caches:
        cache.cache_clear()
    yield folder
    for cache in caches:
        cache.cache_clear()
    for case_id in set(gymnasium.registry) - known:
        del gymnasium.registry[case_id]


def test_a_broken_case_asked_for_by_id_raises_its_own_error(discovered: Path, case_copy: Path) -> None:
    broken = discovered / "broken"
    broken.mkdir()
    (broken / "case.toml").write_text('id = "TrainFail/Broken-v0"\n')  # a case.toml with only an id
    shutil.copytree(case_copy, discovered / "echo")
    registry_module.register_ids()
    assert gymnasium.spec("TrainFail/Broken-v0").entry_point == "gym_trainfail.env:TrainFailEnv"
    with pytest.raises(CaseDefinitionError, match="prompt.text: missing"):
        gym_trainfail.get_case("TrainFail/Broken-v0")  # never a half-loaded case
    assert gym_trainfail.get_case("TrainFailTest/Echo-v0").root == (discovered / "echo").resolve()
    with pytest.raises(UnknownCaseError, match=r"Did you mean 'TrainFailTest/Echo-v0'"):
        gym_trainfail.get_case("TrainFailTest/Eco-v0")
    assert str(broken) in gym_trainfail.default_registry().refused  # the full registry still refuses it


def test_an_id_two_folders_declare_is_resolved_as_the_full_registry_does(discovered: Path, case_copy: Path) -> None:
    first, second = discovered / "a_first", discovered / "b_second"
    shutil.copytree(case_copy, first)
    shutil.copytree(case_copy, second)
    case = gym_trainfail.get_case("TrainFailTest/Echo-v0")
    assert case.root == first.resolve()
    assert "already registered" in gym_trainfail.default_registry().refused[str(second)]


def test_case_hashes_track_content(case_copy: Path) -> None:
    case = load_case(case_copy)
    grader_before, content_before = case.grader_hash(), case.content_hash()
    (case_copy / "grader" / "judge.py").write_text((case_copy / "grader" / "judge.py").read_text() + "\n# v2\n")
    grader_after, content_after = case.grader_hash(), case.content_hash()
    assert grader_before != grader_after and content_before != content_after
    (case_copy / "workspace" / "report.py").write_text("print(42)\n")
    assert case.grader_hash() == grader_after  # the workspace is not part of the grader
    assert case.content_hash() != content_after
