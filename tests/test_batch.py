"""Batch runs on the fast echo case: plan, local worker pool, resumption, infrastructure
failures (a killed worker, a killed driver, a sandbox that cannot start), grading with
deduplication, adjudication, and grader performance options that must not change verdicts."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest

import gym_trainfail.env
from gym_trainfail.batch import (
    LocalRunner,
    RunLayout,
    adjudicate_batch,
    grade_batch,
    load_plan,
    make_plan,
    resolve_cases,
    run_episodes,
    write_plan,
)
from gym_trainfail.batch.adjudicate import tool_usage
from gym_trainfail.batch.plan import BatchPlan
from gym_trainfail.batch.status import read_status
from gym_trainfail.batch.worker import execute_attempt
from gym_trainfail.cases import CaseSpec, load_case
from gym_trainfail.cli import main
from gym_trainfail.errors import GradingError, SandboxUnavailableError, TrainFailError
from gym_trainfail.files import apply_patch
from gym_trainfail.grading import Grader, Job
from gym_trainfail.grading.phases import Phases
from gym_trainfail.runtimes import Runtime
from tests.batch_support import REPO, register_chaos_agent
from tests.conftest import ECHO_CASE, make_echo_group_case


@pytest.fixture
def chaos(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Registers the ``chaos`` agent; returns its marker folder."""
    register_chaos_agent(tmp_path / "site", monkeypatch)
    return tmp_path / "markers"


def echo_plan(
    layout: RunLayout,
    agents: list[str],
    *,
    trials: int = 1,
    max_attempts: int = 3,
    agent_options: dict[str, dict[str, Any]] | None = None,
) -> BatchPlan:
    cases = resolve_cases([str(ECHO_CASE)])
    plan = make_plan(cases, ["control"], agents, trials, sandbox="bwrap", agent_options=agent_options,
                     max_attempts=max_attempts)  # fmt: skip
    return write_plan(layout, plan)


def attempts(layout: RunLayout, episode: str) -> list[str]:
    return [a.state for a in read_status(layout, episode).attempts]


# -- plan -------------------------------------------------------------------------------------


def test_plan_covers_every_combination_and_is_written_first(tmp_path: Path, echo_case: CaseSpec) -> None:
    cases = resolve_cases([str(ECHO_CASE), "TrainFail/DDPTokenAverage-v1"])
    plan = make_plan(cases, ["control", "traincheck"], ["reference", "noop"], 2)
    assert len(plan.episodes) == 2 * 2 * 2 * 2
    assert plan.episodes[0].id == "Echo-v0.control.reference.t1"
    assert plan.episodes[0].case_root == str(echo_case.root) and plan.episodes[0].devices == 2
    layout = RunLayout(tmp_path / "run")
    assert write_plan(layout, plan) == plan
    assert load_plan(layout) == plan
    assert write_plan(layout, make_plan(cases, ["control", "traincheck"], ["reference", "noop"], 2)) == plan


def test_plan_refuses_a_different_batch_in_the_same_directory(tmp_path: Path) -> None:
    layout = RunLayout(tmp_path / "run")
    echo_plan(layout, ["noop"])
    with pytest.raises(TrainFailError) as caught:
        echo_plan(layout, ["noop"], trials=2)
    assert str(caught.value) == (
        f"{layout.root} already holds a different batch (cases ['TrainFailTest/Echo-v0'], arms ['control'], "
        "agents ['noop'], 1 trial(s), sandbox bwrap, profile default); re-run it with the same arguments to "
        "resume, or give a new --out for cases ['TrainFailTest/Echo-v0'], arms ['control'], agents ['noop'], "
        "2 trial(s), sandbox bwrap, profile default"
    )


def test_a_batch_grows_by_cases_without_replaying_the_others(tmp_path: Path) -> None:
    layout = RunLayout(tmp_path / "run")
    echo = resolve_cases([str(ECHO_CASE)])
    both = resolve_cases(["TrainFail/DDPTokenAverage-v1", str(ECHO_CASE)])
    first = write_plan(layout, make_plan(echo, ["control"], ["noop"], 1, sandbox="bwrap"))
    grown = write_plan(layout, make_plan(both, ["control"], ["noop"], 1, sandbox="bwrap"))
    assert grown.episodes[: len(first.episodes)] == first.episodes and grown.created == first.created
    assert [e.case for e in grown.episodes] == ["TrainFailTest/Echo-v0", "TrainFail/DDPTokenAverage-v1"]
    assert grown.spec.cases == ("TrainFailTest/Echo-v0", "TrainFail/DDPTokenAverage-v1")
    assert load_plan(layout) == grown
    # the grown batch resumes as itself; fewer cases, or more cases with other arguments, are refused
    assert write_plan(layout, make_plan(both, ["control"], ["noop"], 1, sandbox="bwrap")) == grown
    for cases, trials in ((echo, 1), (both + resolve_cases(["TrainFail/TPClipGradNorm-v1"]), 2)):
        with pytest.raises(TrainFailError, match="already holds a different batch"):
            write_plan(layout, make_plan(cases, ["control"], ["noop"], trials, sandbox="bwrap"))
    assert load_plan(layout) == grown


def test_a_later_version_of_a_case_supersedes_its_episodes(tmp_path: Path) -> None:
    """A registered version is frozen, so a changed grader comes as Name-v1: the batch drops the
    v0 episodes from its plan and plays the v1 ones, keeping every other case's."""
    later = tmp_path / "echo-v1"
    shutil.copytree(ECHO_CASE, later)
    toml = later / "case.toml"
    toml.write_text(toml.read_text().replace('"TrainFailTest/Echo-v0"', '"TrainFailTest/Echo-v1"'))
    layout = RunLayout(tmp_path / "run")
    before = resolve_cases(["TrainFail/DDPTokenAverage-v1", str(ECHO_CASE)])
    after = resolve_cases(["TrainFail/DDPTokenAverage-v1", str(later)])
    first = write_plan(layout, make_plan(before, ["control"], ["noop"], 1, sandbox="bwrap"))
    grown = write_plan(layout, make_plan(after, ["control"], ["noop"], 1, sandbox="bwrap"))
    assert [e.case for e in grown.episodes] == ["TrainFail/DDPTokenAverage-v1", "TrainFailTest/Echo-v1"]
    assert grown.episodes[0] == first.episodes[0] and grown.created == first.created
    assert grown.spec.cases == ("TrainFail/DDPTokenAverage-v1", "TrainFailTest/Echo-v1")
    assert load_plan(layout) == grown
    # going back to the earlier version is not an update: refused, the plan kept
    with pytest.raises(TrainFailError, match="already holds a different batch"):
        write_plan(layout, make_plan(before, ["control"], ["noop"], 1, sandbox="bwrap"))
    assert load_plan(layout) == grown


def test_case_versions_supersede_only_their_own_earlier_versions() -> None:
    from gym_trainfail.cases import supersedes

    assert supersedes("TrainFail/Name-v1", "TrainFail/Name-v0")
    assert supersedes("TrainFail/Name-v10", "TrainFail/Name-v9")  # numbers, not text
    assert not supersedes("TrainFail/Name-v0", "TrainFail/Name-v1")
    assert not supersedes("TrainFail/Name-v1", "TrainFail/Name-v1")
    assert not supersedes("TrainFail/Other-v1", "TrainFail/Name-v0")
    assert not supersedes("Elsewhere/Name-v1", "TrainFail/Name-v0")
    assert not supersedes("TrainFail/Name-v1", "not an id")


def test_episode_progress_writes_a_line_per_finished_episode_into_a_log() -> None:
    import io

    from rich.console import Console

    from gym_trainfail.batch.driver import Counts
    from gym_trainfail.batch.progress import episode_progress

    log = io.StringIO()  # not a terminal: the bar itself is drawn only at the end
    with episode_progress(Console(file=log, width=200), 3) as hook:
        hook(Counts(total=3, running=2), "")
        hook(Counts(total=3, done=1, running=1), "")
        hook(Counts(total=3, done=1, running=1), "")  # nothing finished since: no new line
        hook(Counts(total=3, done=1, gave_up=1, failed=1), "E.control.noop.t1: gave up after 3 failures")
        during = log.getvalue()
    lines = during.splitlines()
    assert [line for line in lines if line.startswith("episodes 1/3")] == [
        "episodes 1/3 · 1 running · 0 failed · 0 gave up · 0 already done"
    ]
    assert "E.control.noop.t1: gave up after 3 failures" in lines
    assert lines[-1].startswith("episodes 2/3 ·")


def test_plan_checks_names(echo_case: CaseSpec) -> None:
    with pytest.raises(TrainFailError, match=r"^unknown arm\(s\) \['placebo'\]; expected some of"):
        make_plan([echo_case], ["placebo"], ["noop"], 1)
    with pytest.raises(TrainFailError, match=r"^unknown agent\(s\) \['nobody'\]; installed agents: "):
        make_plan([echo_case], ["control"], ["nobody"], 1)
    with pytest.raises(TrainFailError, match=r"^trials must be at least 1, got 0$"):
        make_plan([echo_case], ["control"], ["noop"], 0)
    with pytest.raises(TrainFailError, match=r"^agent options given for \['reference'\], which are not in"):
        make_plan([echo_case], ["control"], ["noop"], 1, agent_options={"reference": {"check": False}})


# -- episodes, grades, adjudication -----------------------------------------------------------


def test_local_batch_runs_grades_adjudicates_and_resumes(tmp_path: Path, runtime: Runtime, bwrap_usable: None) -> None:
    layout = RunLayout(tmp_path / "run")
    plan = echo_plan(layout, ["reference", "noop"], trials=2)
    counts = run_episodes(layout, plan, LocalRunner(layout, 2))
    assert (counts.done, counts.failed, counts.gave_up, counts.skipped) == (4, 0, 0, 0)
    report = grade_batch(layout, plan)
    assert (report.revisions, report.unique_trees) == (4, 2)
    assert report.grader_device_seconds_without_dedup == pytest.approx(2 * report.grader_device_seconds, rel=0.5)
    adjudications = {a["episode"]: a for a in adjudicate_batch(layout, plan)}
    reference = adjudications["Echo-v0.control.reference.t1"]
    assert (reference["solved"], reference["final_pass"], reference["first_valid"]["revision"]) == (True, True, 1)
    assert reference["scenario_table"] == {"runs": ["pass"], "answer": ["pass"]}
    diff = (layout.root / reference["revisions"][0]["source_map"]["diff"]).read_text()
    assert "-ANSWER = 41\n+ANSWER = 42\n" in diff
    assert reference["revisions"][0]["source_map"]["files"] == [
        {"path": "report.py", "change": "modified", "added": 1, "removed": 1, "binary": False}
    ]
    noop = adjudications["Echo-v0.control.noop.t2"]
    assert (noop["solved"], noop["final_status"], noop["first_valid"]) == (False, "fail", None)
    assert noop["scenario_table"] == {"runs": ["pass"], "answer": ["fail"]}
    assert reference["overhead"]["overhead_seconds"] > 0

    again = run_episodes(layout, plan, LocalRunner(layout, 2))
    assert (again.done, again.skipped, again.failed) == (4, 4, 0)
    assert all(attempts(layout, e.id) == ["done"] for e in plan.episodes)
    regraded = grade_batch(layout, plan)
    assert (regraded.graded_now, regraded.node_cache_hits, regraded.reused) == (0, 0, 2)
    assert regraded.grader_device_seconds_spent_now == 0.0


def test_a_killed_worker_is_retried_and_never_counted_against_the_agent(
    tmp_path: Path, runtime: Runtime, bwrap_usable: None, chaos: Path
) -> None:
    layout = RunLayout(tmp_path / "run")
    plan = echo_plan(layout, ["chaos", "noop"], agent_options={"chaos": {"marker_dir": str(chaos), "mode": "kill"}})
    lines: list[str] = []
    counts = run_episodes(layout, plan, LocalRunner(layout, 2), lambda _c, line: lines.append(line))
    assert (counts.done, counts.failed, counts.gave_up) == (2, 1, 0)
    status = read_status(layout, "Echo-v0.control.chaos.t1")
    assert [a.state for a in status.attempts] == ["infra", "done"]
    assert status.attempts[0].reason.startswith("worker killed by SIGKILL before it reported")
    assert any(
        line.startswith("Echo-v0.control.chaos.t1: infrastructure failure (attempt 1, will retry)") for line in lines
    )
    assert (layout.attempt("Echo-v0.control.chaos.t1", 1) / "episode" / "ledger.jsonl").exists()
    grade_batch(layout, plan)
    adjudication = adjudicate_batch(layout, plan)[0]
    assert (adjudication["episode"], adjudication["infra_failures"], adjudication["solved"]) == (
        "Echo-v0.control.chaos.t1",
        1,
        True,
    )


def test_an_episode_out_of_attempts_gives_up(tmp_path: Path, runtime: Runtime, bwrap_usable: None, chaos: Path) -> None:
    layout = RunLayout(tmp_path / "run")
    plan = echo_plan(layout, ["chaos"], max_attempts=1, agent_options={"chaos": {"marker_dir": str(chaos)}})
    counts = run_episodes(layout, plan, LocalRunner(layout, 1))
    assert (counts.done, counts.gave_up) == (0, 1)
    assert read_status(layout, "Echo-v0.control.chaos.t1").state(plan.max_attempts) == "gave-up"
    assert grade_batch(layout, plan).unique_trees == 0 and adjudicate_batch(layout, plan) == []
    plan = echo_plan(layout, ["chaos"], max_attempts=2, agent_options={"chaos": {"marker_dir": str(chaos)}})
    assert run_episodes(layout, plan, LocalRunner(layout, 1)).done == 1


def test_an_agent_error_counts_as_the_agents_episode(
    tmp_path: Path, runtime: Runtime, bwrap_usable: None, chaos: Path
) -> None:
    layout = RunLayout(tmp_path / "run")
    plan = echo_plan(layout, ["chaos"], agent_options={"chaos": {"marker_dir": str(chaos), "mode": "raise"}})
    counts = run_episodes(layout, plan, LocalRunner(layout, 1))
    assert (counts.done, counts.failed) == (1, 0)
    status = read_status(layout, "Echo-v0.control.chaos.t1")
    assert [a.state for a in status.attempts] == ["agent-error"]
    assert status.attempts[0].reason.startswith("RuntimeError: the agent's own code failed")
    grade_batch(layout, plan)
    adjudication = adjudicate_batch(layout, plan)[0]
    assert adjudication["agent_error"].startswith("RuntimeError")
    assert (adjudication["final_status"], adjudication["solved"]) == ("fail", False)


def test_a_sandbox_that_cannot_start_is_an_infrastructure_failure(
    tmp_path: Path, echo_case: CaseSpec, runtime: Runtime, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refuse(backend: str, config: object) -> None:
        raise SandboxUnavailableError("bwrap: setting up uid map: Permission denied")

    monkeypatch.setattr(gym_trainfail.env, "create_sandbox", refuse)
    planned = make_plan([echo_case], ["control"], ["noop"], 1).episodes[0]
    result = execute_attempt(planned, tmp_path / "episode", sandbox="process")
    assert (result.state, result.reason) == (
        "infra",
        "SandboxUnavailableError: bwrap: setting up uid map: Permission denied",
    )


def test_a_killed_driver_loses_nothing_and_a_rerun_finishes(
    tmp_path: Path, runtime: Runtime, bwrap_usable: None, chaos: Path
) -> None:
    run = tmp_path / "run"
    argv = [sys.executable, "-m", "gym_trainfail.cli", "batch", "--cases", str(ECHO_CASE), "--arms", "control",
            "--agents", "noop", "chaos", "--trials", "1", "--workers", "1", "--sandbox", "bwrap", "--out", str(run),
            "--agent-option", f"chaos:marker_dir={chaos}", "--agent-option", "chaos:mode=sleep"]  # fmt: skip
    driver = subprocess.Popen(argv, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    marker = chaos / "Echo-v0.control.chaos.t1.sleep"
    deadline = time.monotonic() + 120
    while not marker.exists() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert marker.exists(), "the chaos episode never started"
    layout = RunLayout(run)
    worker = read_status(layout, "Echo-v0.control.chaos.t1").attempts[-1].pid
    driver.send_signal(signal.SIGKILL)
    driver.wait()
    assert attempts(layout, "Echo-v0.control.noop.t1") == ["done"]
    assert attempts(layout, "Echo-v0.control.chaos.t1") == ["running"]
    assert worker is not None and _gone(worker), "the orphaned worker must stop with its driver"
    rerun = subprocess.run(argv, cwd=REPO, capture_output=True, text=True, timeout=300, check=False)
    assert rerun.returncode == 0, rerun.stderr
    assert attempts(layout, "Echo-v0.control.noop.t1") == ["done"]
    status = read_status(layout, "Echo-v0.control.chaos.t1")
    assert [a.state for a in status.attempts] == ["infra", "done"]
    assert status.attempts[0].reason == "interrupted: the runner or its worker was killed before the attempt reported"
    assert len(list((run / "adjudication").glob("*.json"))) == 2


def _gone(pid: int, within_s: float = 10.0) -> bool:
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        if Path(f"/proc/{pid}/stat").read_text().split()[2] == "Z":
            return True
        time.sleep(0.2)
    return False


def test_cli_rejects_a_partial_batch_spec(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["batch", "--cases", "all", "--out", str(tmp_path / "run")]) == 1
    assert "a new batch needs --cases, --arms, --agents and --trials (or none, to resume --out)" in " ".join(
        capsys.readouterr().err.split()
    )


# -- grading performance options never change a verdict ---------------------------------------


def _echo_revisions(echo_case: CaseSpec, root: Path) -> list[Path]:
    original, repaired, wrong = root / "original", root / "reference", root / "wrong"
    for folder in (original, repaired, wrong):
        shutil.copytree(echo_case.workspace_dir, folder)
    apply_patch(repaired, echo_case.reference_patch)
    apply_patch(wrong, echo_case.wrong_repairs["off-by-one-up"])
    return [original, repaired, wrong]


def test_parallel_scenarios_give_the_same_verdicts(
    tmp_path: Path, echo_case: CaseSpec, runtime: Runtime, bwrap_usable: None
) -> None:
    revisions = _echo_revisions(echo_case, tmp_path)
    sequential = Grader(echo_case, sandbox="bwrap", cache=False)
    parallel = Grader(echo_case, sandbox="bwrap", cache=False, parallel_scenarios=2)
    for revision in revisions:
        one, other = sequential.grade_dir(revision), parallel.grade_dir(revision)
        assert [(o.scenario, o.status, o.reason) for o in one.outcomes] == [
            (o.scenario, o.status, o.reason) for o in other.outcomes
        ]
    assert [sequential.grade_dir(r).status for r in revisions] == ["fail", "pass", "fail"]


def _echo_with(folder: Path, key: str, script: str, name: str) -> Path:
    """A copy of the echo case as ``TrainFailTest/<name>-v0`` whose ``grader.<key>`` runs ``python <script>``."""
    shutil.copytree(ECHO_CASE, folder)
    toml = (folder / "case.toml").read_text().replace("[grader]\n", f'[grader]\n{key} = ["python", "{script}"]\n')
    (folder / "case.toml").write_text(toml.replace("TrainFailTest/Echo-v0", f"TrainFailTest/{name}-v0"))
    return folder


ORACLE_SCRIPT = """
import argparse, json, os, secrets
parser = argparse.ArgumentParser()
parser.add_argument("--scenario", required=True)
parser.add_argument("--out-dir", required=True)
args = parser.parse_args()
scenario = json.load(open(args.scenario))
os.makedirs(args.out_dir)
oracle = {"expect": scenario["params"]["expect"], "nonce": secrets.token_hex(4), "files": os.listdir(".")}
json.dump(oracle, open(os.path.join(args.out_dir, "oracle.json"), "w"))
"""


def test_the_oracle_cache_computes_each_oracle_once_without_changing_verdicts(
    tmp_path: Path, echo_case: CaseSpec, runtime: Runtime, bwrap_usable: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TRAINFAIL_HOME", str(tmp_path / "home"))
    folder = _echo_with(tmp_path / "oracle_case", "oracle_command", "/grader/oracle.py", "EchoOracle")
    (folder / "grader" / "oracle.py").write_text(ORACLE_SCRIPT)
    case = load_case(folder)
    revisions = _echo_revisions(echo_case, tmp_path / "revisions")
    cached = Grader(case, sandbox="bwrap", cache=False, runtime=runtime)
    uncached = Grader(case, sandbox="bwrap", cache=False, runtime=runtime, oracle_cache=False)
    assert cached.oracles is not None and uncached.oracles is not None
    assert cached.oracles.root != uncached.oracles.root, "without the cache, oracles live as long as the grader"
    receipts = [cached.grade_dir(r) for r in revisions]
    for revision, receipt in zip(revisions, receipts, strict=True):
        assert [(o.scenario, o.status) for o in receipt.outcomes] == [
            (o.scenario, o.status) for o in uncached.grade_dir(revision).outcomes
        ]
    nonces = {
        o.scenario: {r.outcomes[i].metrics["nonce"] for r in receipts} for i, o in enumerate(receipts[0].outcomes)
    }
    assert all(len(seen) == 1 for seen in nonces.values()), "each scenario's oracle must be computed once"
    assert all(o.metrics["oracle_saw"] == [] for o in receipts[0].outcomes), "oracles run without any revision"
    assert [r.status for r in receipts] == ["fail", "pass", "fail"]


FIXTURES_SCRIPT = """
import argparse, json, os, secrets
parser = argparse.ArgumentParser()
parser.add_argument("--out-dir", required=True)
args = parser.parse_args()
os.makedirs(args.out_dir)
made = {"nonce": secrets.token_hex(4), "grader": os.path.exists("/grader"), "kit": os.path.isdir("/kit")}
json.dump(made, open(os.path.join(args.out_dir, "made.json"), "w"))
"""
#: What the echo run kit (copied) adds to each report: the fixture it was given, and whether it
#: (the revision's side of the sandbox) could change it.
FIXTURE_PROBE = """
            "fixture": open("/fixtures/made.json").read() if os.path.exists("/fixtures/made.json") else "",
            "fixture_writable": os.access("/fixtures", os.W_OK) or _tamper(),
"""
TAMPER = """
def _tamper() -> bool:
    try:
        with open("/fixtures/made.json", "w") as fh:
            fh.write("{}")
        return True
    except OSError:
        return False


def main() -> None:"""


def test_fixtures_are_made_once_from_the_kit_alone_and_no_run_can_change_them(
    tmp_path: Path, echo_case: CaseSpec, runtime: Runtime, bwrap_usable: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TRAINFAIL_HOME", str(tmp_path / "home"))
    check_fixture_cache(tmp_path, echo_case, runtime, "bwrap")


def check_fixture_cache(tmp_path: Path, echo_case: CaseSpec, runtime: Runtime, backend: str) -> None:
    """A case with a fixtures command, graded on ``backend``: the fixture is made once, from the kit
    alone, is read-only to every run, and a command that fails costs no verdict (the Docker
    backend's test calls it too)."""
    folder = _echo_with(tmp_path / "fixture_case", "fixtures_command", "/kit/fixtures.py", "EchoFixtures")
    (folder / "grader" / "kit" / "fixtures.py").write_text(FIXTURES_SCRIPT)
    run = (folder / "grader" / "kit" / "run.py").read_text()
    total = '            "total_s": time.monotonic() - started,\n'
    run = run.replace(total, FIXTURE_PROBE.lstrip("\n") + total)
    (folder / "grader" / "kit" / "run.py").write_text(run.replace("\ndef main() -> None:", TAMPER, 1))
    judge = (folder / "grader" / "judge.py").read_text()
    judge = judge.replace(
        '            "harnesslib": record.get("harnesslib") is True,\n',
        '            "harnesslib": record.get("harnesslib") is True,\n'
        '            "fixture": str(record.get("fixture", ""))[:200],\n'
        '            "fixture_writable": record.get("fixture_writable") is not False,\n',
    )
    (folder / "grader" / "judge.py").write_text(judge)
    case = load_case(folder)
    revisions = _echo_revisions(echo_case, tmp_path / "revisions")
    receipts = [Grader(case, sandbox=backend, cache=False, runtime=runtime).grade_dir(r) for r in revisions]
    receipts.append(Grader(case, sandbox=backend, cache=False, runtime=runtime).grade_dir(revisions[1]))
    assert [r.status for r in receipts] == ["fail", "pass", "fail", "pass"], "fixtures change no verdict"
    seen = {o.metrics["fixture"] for r in receipts for o in r.outcomes}
    assert len(seen) == 1, f"one fixture, made once for every run of every grader: {seen}"
    made = json.loads(seen.pop())
    assert made["kit"] and not made["grader"], "fixtures are made from the kit alone, never the private grader"
    assert not any(o.metrics["fixture_writable"] for r in receipts for o in r.outcomes), "fixtures are read-only"

    # a fixtures command that fails costs time, never a verdict: runs go on without /fixtures
    (folder / "grader" / "kit" / "fixtures.py").write_text("raise SystemExit(3)\n")
    broken = load_case(folder)
    receipt = Grader(broken, sandbox=backend, cache=False, runtime=runtime).grade_dir(revisions[1])
    assert receipt.status == "pass" and {o.metrics["fixture"] for o in receipt.outcomes} == {""}


def test_scenario_groups_give_the_same_verdicts_and_fall_back_on_their_own(
    tmp_path: Path, echo_case: CaseSpec, runtime: Runtime, bwrap_usable: None
) -> None:
    case = load_case(make_echo_group_case(tmp_path / "echo_group_case"))
    revisions = _echo_revisions(echo_case, tmp_path / "revisions")
    grouped = Grader(case, sandbox="bwrap", cache=False, runtime=runtime)
    single = Grader(case, sandbox="bwrap", cache=False, runtime=runtime, group_scenarios=False)
    assert [[s.name for s in unit] for unit in grouped.partition(case.scenarios)] == [
        ["runs", "answer", "answer-alone"],
        ["answer-on-two"],
    ]
    receipts = []
    for revision in revisions:
        one, other = grouped.grade_dir(revision), single.grade_dir(revision)
        assert [(o.scenario, o.status, o.reason) for o in one.outcomes] == [
            (o.scenario, o.status, o.reason) for o in other.outcomes
        ]
        assert not any(o.grouped for o in other.outcomes)
        receipts.append(one)
    assert [r.status for r in receipts] == ["fail", "pass", "fail"]
    outcomes = {o.scenario: o for o in receipts[1].outcomes}
    # the group's two judged scenarios came from one launch; the one it skipped ran alone
    assert outcomes["runs"].grouped and outcomes["answer"].grouped
    assert outcomes["runs"].metrics["launch"] == outcomes["answer"].metrics["launch"]
    assert not outcomes["answer-alone"].grouped and outcomes["answer-alone"].attempts == 2
    assert outcomes["answer-alone"].metrics["launch"] != outcomes["runs"].metrics["launch"]
    assert not outcomes["answer-on-two"].grouped, "a one-scenario unit runs with the one-scenario protocol"
    assert all(o.device_seconds > 0 for o in outcomes.values())
    assert all(o.metrics["harnesslib"] for o in outcomes.values()), "harness support code is mounted"

    # a group launch that dies without outcomes decides nothing: every scenario runs alone
    crashing = tmp_path / "revisions" / "reference-crash"
    shutil.copytree(revisions[1], crashing)
    (crashing / "crash-group").write_text("")
    receipt = grouped.grade_dir(crashing)
    assert receipt.status == "pass"
    assert not any(o.grouped for o in receipt.outcomes)
    assert [o.attempts for o in receipt.outcomes] == [2, 2, 2, 1]

    # a group run that ends badly after its judge could see everything: its passes stand, its
    # failures are graded again alone (the scenario that broke the run may have caused them)
    broken = tmp_path / "revisions" / "original-exit"
    shutil.copytree(revisions[0], broken)
    (broken / "exit-group-3").write_text("")
    outcomes = {o.scenario: o for o in grouped.grade_dir(broken).outcomes}
    assert outcomes["runs"].status == "pass" and outcomes["runs"].grouped and outcomes["runs"].attempts == 1
    assert outcomes["answer"].status == "fail" and not outcomes["answer"].grouped
    assert outcomes["answer"].attempts == 2


def test_one_scenario_launches_share_one_judge_but_never_a_run(
    tmp_path: Path, echo_case: CaseSpec, runtime: Runtime, bwrap_usable: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    case = load_case(make_echo_group_case(tmp_path / "echo_group_case"))
    revisions = _echo_revisions(echo_case, tmp_path / "revisions")
    single = Grader(case, sandbox="bwrap", cache=False, runtime=runtime, group_scenarios=False)
    phases: list[str] = []
    original = Phases.phase

    def spy(self: Phases, label: str, *args: Any, **kwargs: Any) -> Any:
        phases.append(label)
        return original(self, label, *args, **kwargs)

    monkeypatch.setattr(Phases, "phase", spy)
    receipt = single.grade_dir(revisions[1])
    assert receipt.status == "pass"
    names = [s.name for s in case.scenarios]
    assert sorted(p for p in phases if p.startswith("grade-run")) == sorted(
        f"grade-run-1x{s.devices}" for s in case.scenarios
    ), "every scenario runs in a sandbox of its own"
    assert [p for p in phases if p.startswith("grade-judge")] == [f"grade-judge-{len(names)}"]
    launches = {o.metrics["launch"] for o in receipt.outcomes}
    assert len(launches) == len(names), "no two scenarios came from one launch"
    assert all(o.device_seconds > 0 and not o.grouped for o in receipt.outcomes)

    # attack: one run ends badly after leaving everything; it must not share the clean runs'
    # judge (whose facts say exit 0) and is judged alone, with its own facts
    broken = tmp_path / "revisions" / "exit-alone"
    shutil.copytree(revisions[0], broken)
    (broken / "exit-alone-3").write_text("answer")
    phases.clear()
    outcomes = {o.scenario: o for o in single.grade_dir(broken).outcomes}
    judges = sorted(p for p in phases if p.startswith("grade-judge"))
    assert judges == ["grade-judge-1", f"grade-judge-{len(names) - 1}"], judges
    plain = Grader(case, sandbox="bwrap", cache=False, runtime=runtime, parallel_scenarios=2, group_scenarios=False)
    monkeypatch.setattr(Phases, "phase", original)
    expected = {o.scenario: (o.status, o.reason) for o in plain.grade_dir(broken).outcomes}
    assert {name: (o.status, o.reason) for name, o in outcomes.items()} == expected
    assert outcomes["answer"].status == "fail"


# -- adjudication helpers ---------------------------------------------------------------------


def test_tool_usage_says_whether_and_when_traincheck_was_used() -> None:
    events = [
        {"event": "reset", "t": 100.0},
        {"event": "step", "t": 101.0, "tool": "shell"},
        {"event": "audit", "t": 130.5, "step": 4, "source": "hook", "report": {"type": "usage", "kind": "command"}},
        {"event": "audit", "t": 130.5, "step": 4, "source": "watch",
         "report": {"type": "access", "target": "command", "access": "read"}},
        {"event": "audit", "t": 140.0, "step": 6, "source": "hook", "report": {"type": "usage", "kind": "import"}},
        {"event": "audit", "t": 150.0, "step": 9, "source": "hook", "report": {"type": "usage", "kind": "command"}},
    ]  # fmt: skip
    usage = tool_usage(events)
    assert usage["traincheck"] == {
        "count": 3,
        "records": 4,
        "by_kind": {"hook:command": 2, "hook:import": 1, "watch:read": 1},
        "first_at_seconds": 30.5,
        "first_step": 4,
    }
    assert usage["blocked"]["count"] == 0 and usage["mention"]["first_at_seconds"] is None


def test_grading_report_is_the_stage_handoff(tmp_path: Path, runtime: Runtime, bwrap_usable: None) -> None:
    layout = RunLayout(Path(tempfile.mkdtemp(dir=tmp_path)))
    plan = echo_plan(layout, ["noop"])
    run_episodes(layout, plan, LocalRunner(layout, 1))
    grade_batch(layout, plan)
    report = json.loads(layout.grading_report.read_text())
    assert (report["revisions"], report["unique_trees"], report["errors"]) == (1, 1, 0)
    assert report["per_tree"][0]["status"] == "fail"


def test_several_revisions_share_one_judge_and_keep_their_own_verdicts(
    tmp_path: Path, echo_case: CaseSpec, runtime: Runtime, bwrap_usable: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Qualification's hinted variants: each revision's run in a sandbox of its own, one judge for
    every clean run (under names of their own), a run that did not end cleanly judged on its own,
    and each verdict the revision's alone would get."""
    original, repaired, wrong = _echo_revisions(echo_case, tmp_path / "revisions")
    (wrong / "exit-alone-3").write_text("answer\n")  # this one's run exits 3 after leaving its outputs
    grader = Grader(echo_case, sandbox="bwrap", cache=False, runtime=runtime, group_scenarios=False)
    phases: list[str] = []
    original_phase = Phases.phase

    def spy(self: Phases, label: str, *args: Any, **kwargs: Any) -> Any:
        phases.append(label)
        return original_phase(self, label, *args, **kwargs)

    monkeypatch.setattr(Phases, "phase", spy)
    answer, runs = echo_case.scenario("answer"), echo_case.scenario("runs")
    jobs = [Job("original", original, answer), Job("reference", repaired, answer),
            Job("reference-runs", repaired, runs), Job("wrong", wrong, answer)]  # fmt: skip
    outcomes = grader.grade_many(jobs, parallel=2)
    assert {key: o.status for key, o in outcomes.items()} == {
        "original": "fail", "reference": "pass", "reference-runs": "pass", "wrong": "fail"
    }  # fmt: skip
    assert all(o.scenario in ("answer", "runs") for o in outcomes.values()), "verdicts keep the scenarios' names"
    assert sorted(p for p in phases if p.startswith("grade-run")) == ["grade-run-1x1"] + ["grade-run-1x2"] * 3
    # three clean runs share one judge; the run that exited 3 is judged by itself
    assert sorted(p for p in phases if p.startswith("grade-judge")) == ["grade-judge-1", "grade-judge-3"]
    with pytest.raises(GradingError, match="unique"):
        grader.grade_many([Job("x", original, answer), Job("x", repaired, answer)])
