"""Issue acceptance: the reference agent's DDPTokenAverage episode earns reward 1 with a first
valid revision; the noop agent's earns 0. Real Trainer, real 2-rank gloo, real bubblewrap."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gym_trainfail import get_case
from gym_trainfail.agent import load_agent
from gym_trainfail.cli import main
from gym_trainfail.episode import grade_run, run_episode
from gym_trainfail.ledger import read_events
from gym_trainfail.runtimes import Runtime

pytestmark = pytest.mark.slow
CASE = "TrainFail/DDPTokenAverage-v1"


def test_reference_agent_repairs_and_noop_does_not(runtime: Runtime, bwrap_usable: None, tmp_path: Path) -> None:
    case = get_case(CASE)
    reference = run_episode(load_agent("reference"), case=case, sandbox="bwrap", run_dir=tmp_path / "reference")
    assert (reference.reward, reference.reward_status, reference.final_revision) == (1.0, "graded", 1)
    events = read_events(reference.run_dir / "ledger.jsonl")
    jobs = [e for e in events if e["event"] == "device"]
    assert len(jobs) == 1 and jobs[0]["devices"] == case.topology.devices_per_job
    assert reference.summary.solver_device_seconds > 0
    grades = grade_run(reference.run_dir, sandbox="bwrap")
    assert grades.first_valid is not None and grades.first_valid.revision == 1
    assert grades.first_valid.cost.solver_device_seconds == pytest.approx(jobs[0]["device_seconds"])

    noop = run_episode(load_agent("noop"), case=case, sandbox="bwrap", run_dir=tmp_path / "noop")
    assert (noop.reward, noop.reward_status) == (0.0, "graded")
    assert grade_run(noop.run_dir, sandbox="bwrap").first_valid is None


def test_cli_run_and_grade_json(
    runtime: Runtime, bwrap_usable: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "run"
    assert main(["run", "--case", CASE, "--agent", "reference", "--sandbox", "bwrap", "--out", str(out), "--json"]) == 0
    episode = json.loads(capsys.readouterr().out)
    assert episode["reward"] == 1.0 and episode["summary"]["submits"] == 1
    assert main(["grade", str(out), "--json"]) == 0
    grades = json.loads(capsys.readouterr().out)
    assert grades["first_valid_revision"] == 1
    assert grades["first_valid_cost"]["solver_device_seconds"] > 0
