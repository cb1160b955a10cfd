"""The case-author path: scaffolding, the admission gate, leak scan, third-party packages."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from gym_trainfail.cases import load_case
from gym_trainfail.errors import TrainFailError
from gym_trainfail.qualify import CANARY_RE, forced_settings, leak_scan, qualify
from gym_trainfail.runtimes import Runtime
from gym_trainfail.scaffold import scaffold_case

from .conftest import ECHO_CASE


def test_scaffold_passes_schema_validation_and_plants_a_canary(tmp_path: Path) -> None:
    case = scaffold_case("fsdp state-skew", tmp_path)
    assert case.id == "TrainFail/FsdpStateSkew-v0"
    assert case.root == tmp_path / "fsdp_state_skew"
    assert load_case(case.root).id == case.id
    assert CANARY_RE.search((case.grader_dir / "judge.py").read_text())
    assert not CANARY_RE.search((case.kit_dir / "run.py").read_text()), "the run kit is visible to revision code"
    assert leak_scan(case) == []
    with pytest.raises(TrainFailError, match="already exists"):
        scaffold_case("FsdpStateSkew", tmp_path)


@pytest.mark.slow
def test_gate_admits_the_scaffold_and_refuses_a_broken_case(
    tmp_path: Path, runtime: Runtime, bwrap_usable: None
) -> None:
    case = scaffold_case("ToyMean", tmp_path)
    # the scaffold is built on the case SDK: the kit and the judge are the case's parts only
    kit, judge = (case.kit_dir / "run.py").read_text(), (case.grader_dir / "judge.py").read_text()
    assert "runkit.case_kit(" in kit and "Pipeline(" in kit and "judgekit.JudgeKit(" in judge
    assert "from compare import" in judge and "params_base(" in (case.kit_dir / "scenario.py").read_text()
    assert (case.kit_dir / "params.toml").is_file(), "the base scenario is data"
    result = qualify(case, sandbox="bwrap", repeats=2, wrong_repairs=True)
    assert result.admitted, result.problems
    assert [v.label for v in result.variants] == [
        "unmodified#1", "unmodified#2 (grouped)", "reference (grouped)", "wrong:local-count (grouped)"
    ]  # fmt: skip
    assert result.variants[-1].receipt.status == "fail"
    # The same case with the failure scenario declared healthy is refused, with the reason.
    scenarios = case.grader_dir / "scenarios.toml"
    scenarios.write_text(scenarios.read_text().replace('kind = "failure"', 'kind = "healthy"', 1))
    scenarios.write_text(scenarios.read_text().replace('kind = "healthy"', 'kind = "failure"', 1))
    refused = qualify(load_case(case.root), sandbox="bwrap", repeats=1)
    assert not refused.admitted
    assert any(
        re.search(r"unmodified#1/equal-shards \(failure\): expected fail, got pass", p) for p in refused.problems
    )


def test_leak_scan_finds_a_canary_in_the_workspace(case_copy: Path) -> None:
    canary = CANARY_RE.search((case_copy / "grader" / "scenarios.toml").read_text())
    assert canary is not None
    (case_copy / "workspace" / "notes.md").write_text(f"copied from the grader: {canary.group(0)}\n")
    problems = leak_scan(load_case(case_copy))
    assert problems == ["grader canary found in workspace/notes.md: private grader content leaked"]


def test_grader_without_canary_is_refused(case_copy: Path) -> None:
    scenarios = case_copy / "grader" / "scenarios.toml"
    scenarios.write_text(CANARY_RE.sub("no canary here", scenarios.read_text()))
    assert "the grader carries no canary" in leak_scan(load_case(case_copy))[0]


def test_echo_fixture_qualifies_with_wrong_repairs(echo_case: object, runtime: Runtime, bwrap_usable: None) -> None:
    result = qualify(load_case(ECHO_CASE), sandbox="bwrap", repeats=2, wrong_repairs=True)
    assert result.admitted, result.problems
    statuses = {v.label: v.receipt.status for v in result.variants}
    assert statuses == {
        "unmodified#1": "fail",
        "unmodified#2 (grouped)": "fail",
        "reference (grouped)": "pass",
        "wrong:off-by-one-up (grouped)": "fail",
    }


def _third_party_package(root: Path) -> Path:
    package = root / "trainfail-extra-cases"
    module = package / "trainfail_extra_cases"
    shutil.copytree(ECHO_CASE, module / "cases" / "echo")
    toml = module / "cases" / "echo" / "case.toml"
    toml.write_text(toml.read_text().replace('id = "TrainFailTest/Echo-v0"', 'id = "TrainFailExtra/Echo-v0"'))
    (module / "__init__.py").write_text(
        '"""Extra cases for gym-trainfail."""\nfrom pathlib import Path\n\nCASES = Path(__file__).parent / "cases"\n'
    )
    (package / "pyproject.toml").write_text(
        textwrap.dedent(
            """\
            [build-system]
            requires = ["setuptools>=69"]
            build-backend = "setuptools.build_meta"

            [project]
            name = "trainfail-extra-cases"
            version = "0.1.0"

            [project.entry-points."gym_trainfail.cases"]
            extra = "trainfail_extra_cases:CASES"

            [tool.setuptools.package-data]
            trainfail_extra_cases = ["cases/**/*"]
            """
        )
    )
    return package


def test_third_party_case_package_plays_through_gymnasium_make(
    tmp_path: Path, runtime: Runtime, bwrap_usable: None
) -> None:
    package = _third_party_package(tmp_path)
    site = tmp_path / "site"
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(site), str(package)],
        check=True,
    )
    assert not (site / "trainfail_extra_cases" / "cases" / "echo" / "case.toml").is_symlink()
    script = textwrap.dedent(
        f"""
        import json, gymnasium, gym_trainfail
        env = gymnasium.make("TrainFailExtra/Echo-v0", sandbox="bwrap", runs_root={str(tmp_path / "runs")!r})
        env.reset(seed=0)
        env.step({{"tool": "edit_file", "arguments": {{"path": "report.py", "old_text": "41", "new_text": "42"}}}})
        env.step({{"tool": "submit", "arguments": {{}}}})
        _, reward, terminated, _, _ = env.step({{"tool": "finish", "arguments": {{}}}})
        print(json.dumps({{"reward": reward, "terminated": terminated, "ids": gym_trainfail.registered_ids()}}))
        """
    )
    env = {**os.environ, "PYTHONPATH": str(site)}
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["reward"] == 1.0 and result["terminated"] is True
    assert "TrainFailExtra/Echo-v0" in result["ids"]


def test_gate_prints_the_forced_settings_and_refuses_a_grader_without_them(
    case_copy: Path, runtime: Runtime, bwrap_usable: None
) -> None:
    case = load_case(case_copy)
    table = forced_settings(case)
    assert table.splitlines()[0].startswith("| setting |") and "report.py" in table
    (case_copy / "grader" / "README.md").write_text("# Grader\n\nNo table here.\n")
    refused = qualify(load_case(case_copy), sandbox="bwrap", repeats=1)
    assert not refused.admitted and refused.forced_settings == ""
    assert any("the grader lists no forced settings" in p for p in refused.problems)
