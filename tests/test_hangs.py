"""Runs that stop making progress (a hang), with real gloo ranks in real sandboxes.

* Grading: a scenario whose run does not finish by its deadline fails with "no progress after N s"
  (never ``error``), alone (the host's clock) and in a group (the run kit stops it and the
  group's next scenario still runs), with the same words both ways, whatever the run printed or
  wrote before it hung; nothing of it is left running.
* ``run_job``: a hung job returns at its deadline with what it printed, its whole tree stopped,
  its devices released and the step recorded; the episode goes on. The episode's budget bounds
  the deadline too.
* Seeing where ranks wait: same-user tracing works inside the sandbox (what ``py-spy dump``
  needs) and ``kill -ABRT`` prints every thread's stack in agent commands. (A hook that dumps
  stacks on SIGUSR1 without ending the process, and py-spy in the runtimes, change the runtime
  locks and digests: not done yet.)
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from gym_trainfail.cases import CaseSpec, Scenario, load_case
from gym_trainfail.env import TrainFailEnv
from gym_trainfail.grading import Grader
from gym_trainfail.grading.phases import GROUP_ALLOWANCE_S, run_limit_s
from gym_trainfail.harnesslib import judgekit
from gym_trainfail.harnesslib.judgekit import launch_deadline, no_progress
from gym_trainfail.ledger import read_events
from gym_trainfail.runtimes import Runtime
from gym_trainfail.sandbox import Limits, Sandbox, SandboxConfig, create_sandbox
from gym_trainfail.sandbox.base import GiB
from tests.conftest import ECHO_CASE, FIXTURES
from tests.test_docker import control_image, docker_engine_session  # noqa: F401 - fixtures

HANG_CASE = FIXTURES / "cases" / "hang_case"
#: What every process of the fixture's pipeline has on its command line.
MARKER = b"exchange.run"
BACKENDS = ["bwrap", pytest.param("docker", marks=pytest.mark.docker)]


@pytest.fixture(scope="module")
def hang_case() -> CaseSpec:
    return load_case(HANG_CASE)


def scenario(case: CaseSpec, name: str) -> Scenario:
    return next(s for s in case.scenarios if s.name == name)


def leftovers(marker: bytes = MARKER) -> list[int]:
    """Live processes on this host whose command line holds ``marker`` (zombies have none)."""
    found = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit() and proc.name != str(os.getpid()):
            try:
                if marker in (proc / "cmdline").read_bytes():
                    found.append(int(proc.name))
            except OSError:
                continue
    return found


def grader_for(backend: str, case: CaseSpec, request: pytest.FixtureRequest, *, group: bool = True) -> Grader:
    if backend == "docker":
        request.getfixturevalue("control_image")
    return Grader(case, sandbox=backend, cache=False, oracle_cache=False, group_scenarios=group)


# -- grading ---------------------------------------------------------------------------------


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_hang_alone_fails_with_no_progress_at_its_host_deadline(
    backend: str, hang_case: CaseSpec, runtime: Runtime, bwrap_usable: None, request: pytest.FixtureRequest
) -> None:
    """One scenario per run, as qualification grades the unmodified workspace beside its groups
    (each run in a sandbox of its own; the clean ones share a judge)."""
    grader = grader_for(backend, hang_case, request, group=False)
    uneven, even = scenario(hang_case, "uneven"), scenario(hang_case, "even")
    receipt = grader.grade_dir(hang_case.workspace_dir, scenarios=[uneven, even])
    outcomes = {o.scenario: o for o in receipt.outcomes}
    hung = outcomes["uneven"]
    assert hung.status == "fail", hung
    assert hung.reason == no_progress(uneven.timeout_s)
    assert hung.reason.startswith("no progress after 15 s")
    assert hung.attempts == 1 and not hung.grouped  # decided by the host at once, never retried
    assert outcomes["even"].status == "pass", outcomes["even"]
    assert receipt.cacheable  # verdicts, no unknown
    assert leftovers() == [], "a rank of the hung run outlived its grading"


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_hang_in_a_group_fails_alike_and_the_next_scenario_still_passes(
    backend: str, hang_case: CaseSpec, runtime: Runtime, bwrap_usable: None, request: pytest.FixtureRequest
) -> None:
    grader = grader_for(backend, hang_case, request)
    uneven, even = scenario(hang_case, "uneven"), scenario(hang_case, "even")
    # the hang first: its deadline counts the warm launcher's start-up, and the group goes on after it
    receipt = grader.grade_dir(hang_case.workspace_dir, scenarios=[uneven, even])
    outcomes = {o.scenario: o for o in receipt.outcomes}
    assert outcomes["uneven"].status == "fail", outcomes["uneven"]
    assert outcomes["uneven"].reason == no_progress(uneven.timeout_s)  # the words it gets alone
    assert outcomes["uneven"].metrics["stopped_by"] == "run kit"
    assert outcomes["even"].status == "pass", outcomes["even"]
    # judged in the group's own run: nothing was graded again alone
    assert all(o.grouped and o.attempts == 1 for o in outcomes.values())
    assert leftovers() == [], "a rank of the hung run outlived its grading"


FORGED_RUN = '''
"""Writes the right total at once, then claims progress forever and never exits."""
import argparse, json, os, time
from pathlib import Path

parser = argparse.ArgumentParser()
parser.add_argument("--tokens", required=True)
parser.add_argument("--out", type=Path, required=True)
args = parser.parse_args()
rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
counts = [int(x) for x in args.tokens.split(",")]
if rank == 0:
    args.out.mkdir(parents=True, exist_ok=True)
    total = float(sum(counts[r % len(counts)] for r in range(world)))
    (args.out / "result.json").write_text(json.dumps({"total": total, "rounds": 1}))
step = 0
while True:
    step += 1
    print(f"rank {rank}: round {step} done, loss {1.0 / step:.4f}", flush=True)
    time.sleep(0.5)
'''


def test_a_run_that_writes_its_outputs_and_prints_progress_then_hangs_still_fails(
    hang_case: CaseSpec, runtime: Runtime, bwrap_usable: None, tmp_path: Path
) -> None:
    """The verdict never rests on what the run printed or left: alone, the host's clock decides
    without a judge; in a group, a launch the kit stopped is a fail whatever outputs it wrote."""
    workspace = tmp_path / "forged"
    shutil.copytree(hang_case.workspace_dir, workspace)
    (workspace / "exchange" / "run.py").write_text(FORGED_RUN)
    grader = Grader(hang_case, sandbox="bwrap", cache=False, oracle_cache=False)
    uneven = scenario(hang_case, "uneven")
    short = replace(scenario(hang_case, "even"), timeout_s=10.0)
    (alone,) = grader.grade_dir(workspace, scenarios=[uneven]).outcomes
    grouped = {o.scenario: o for o in grader.grade_dir(workspace, scenarios=[uneven, short]).outcomes}
    assert alone.status == "fail" and alone.reason == no_progress(uneven.timeout_s)
    assert grouped["uneven"].status == "fail" and grouped["uneven"].reason == no_progress(uneven.timeout_s)
    assert grouped["even"].status == "fail" and grouped["even"].reason == no_progress(short.timeout_s)
    assert all(o.attempts == 1 for o in (alone, *grouped.values()))
    assert leftovers(b"exchange.run") == []


def test_the_reason_names_the_deadline_the_request_set_never_the_runs_word(tmp_path: Path) -> None:
    """The judge side's rule, on its own: a launch the kit reports stopped fails with the
    deadline from the request (the case's shorter per-launch limit where it has one), even with
    complete outputs; a run that claims it finished is judged on its outputs as usual."""

    class Sc:
        name = "s"
        run_timeout_s = 540.0

    assert launch_deadline({"timeout_s": 30}, Sc()) == 30
    shorter = Sc()
    shorter.run_timeout_s = 12.5
    assert launch_deadline({"timeout_s": 30}, shorter) == 12.5
    # nonsense in the request or the scenario is ignored, never trusted
    assert launch_deadline({"timeout_s": True}, Sc()) == 540
    assert launch_deadline({"timeout_s": -5}, Sc()) == 540
    assert no_progress(30.0) == "no progress after 30 s: the run had not finished by its deadline and was stopped"
    assert no_progress(2.5).startswith("no progress after 2.5 s")

    folder = tmp_path / "artifacts" / "s"
    folder.mkdir(parents=True)
    (folder / "result.json").write_text(json.dumps({"total": 8.0}))
    kit = judgekit.JudgeKit("T", lambda raw: Sc(), lambda sc, f: _Obs(), lambda sc, obs: judgekit.Verdict("pass", "ok"))
    run = {"exit_code": 0, "timed_out": False, "oom_killed": False, "output_tail": ""}
    (folder / "timings.json").write_text(json.dumps({"timed_out": True, "returncode": None}))
    verdict, _ = judgekit.judge_scenario(kit, Sc(), tmp_path / "artifacts", run, 30.0)
    assert (verdict.status, verdict.reason) == ("fail", no_progress(30.0))
    (folder / "timings.json").write_text(json.dumps({"timed_out": False, "returncode": 0}))
    verdict, _ = judgekit.judge_scenario(kit, Sc(), tmp_path / "artifacts", run, 30.0)
    assert verdict.status == "pass"


class _Obs:
    metrics: list[Any] = []


def test_a_scenario_alone_gets_its_deadline_and_a_group_room_between_launches() -> None:
    one = Scenario("a", "failure", 2, 30.0)
    two = Scenario("b", "healthy", 2, 300.0)
    assert run_limit_s([one]) == 30.0
    assert run_limit_s([one, two]) == 330.0 + 2 * GROUP_ALLOWANCE_S


# -- launches leave nothing behind ------------------------------------------------------------

LAUNCH_PROBE = """
import os, sys
sys.path.insert(0, sys.argv[1])
import warm_launch
from pathlib import Path
assert warm_launch.become_subreaper()
marker, mode = sys.argv[2], sys.argv[3]
# torchrun's workers run in sessions of their own; a daemon leaves its parent at once
if mode == "hang":
    script = (f"setsid bash -c 'exec -a {marker}-worker sleep 300' & "
              f"(setsid bash -c 'exec -a {marker}-daemon sleep 300' &); echo begun; wait")
    limit = 2
else:
    script = f"(setsid bash -c 'exec -a {marker}-daemon sleep 300' &) ; echo begun; exit 0"
    limit = 60
ended = warm_launch.launch_cold(["bash", "-c", script], Path.cwd(), dict(os.environ), Path("probe.log"), limit)
print(ended.returncode, Path("probe.log").read_text().strip())
"""


@pytest.mark.parametrize("mode", ["hang", "exit"])
def test_a_cold_launch_leaves_no_process_in_any_session(mode: str, tmp_path: Path) -> None:
    """What killing torchrun's process group missed: workers in sessions of their own (at the
    time limit) and processes a launch daemonised (after it exited)."""
    marker = f"trainfail-hangtest-{os.getpid()}-{mode}"
    harnesslib = Path(judgekit.__file__).resolve().parent
    probe = subprocess.run(
        [sys.executable, "-c", LAUNCH_PROBE, str(harnesslib), marker, mode],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert probe.returncode == 0, probe.stderr
    assert probe.stdout.split() == (["None", "begun"] if mode == "hang" else ["0", "begun"])
    time.sleep(0.3)
    assert leftovers(marker.encode()) == [], "a process of the launch outlived it"


WARM_PROBE = """
import os, subprocess, sys, time
if sys.argv[1:] == ["hang"]:
    subprocess.Popen(["setsid", "bash", "-c", "exec -a " + os.environ["PROBE_MARKER"] + " sleep 300"])
    time.sleep(300)
"""


def test_a_warm_launch_stopped_at_its_deadline_leaves_no_process(tmp_path: Path) -> None:
    from gym_trainfail.harnesslib import warm_launch  # noqa: PLC0415 - the module under test

    (tmp_path / "probe_hang.py").write_text(WARM_PROBE)
    marker = f"trainfail-warmhang-{os.getpid()}"
    env = {**os.environ, "PROBE_MARKER": marker}
    with warm_launch.WarmLauncher([], env, tmp_path / "server.log") as launcher:
        warm_launch.set_deadline(2.0)  # the scenario's deadline, shorter than the launch's own limit
        try:
            ended = launcher.launch("probe_hang", ["hang"], 2, tmp_path, env, tmp_path / "hang.log", 120)
        finally:
            warm_launch.set_deadline(None)
        assert ended.timed_out
        time.sleep(0.3)
        assert leftovers(marker.encode()) == [], "a rank's child in its own session outlived the launch"
        warm_launch.set_deadline(0.0)  # a deadline already passed: nothing starts
        try:
            late = launcher.launch("probe_hang", ["hang"], 2, tmp_path, env, tmp_path / "late.log", 120)
        finally:
            warm_launch.set_deadline(None)
        assert late.timed_out and "deadline had passed" in (tmp_path / "late.log").read_text()


# -- run_job ----------------------------------------------------------------------------------


@pytest.fixture
def hang_env(hang_case: CaseSpec, runtime: Runtime, bwrap_usable: None, tmp_path: Path) -> Iterator[TrainFailEnv]:
    env = TrainFailEnv(case=hang_case, sandbox="bwrap", runs_root=tmp_path / "runs", grade_on_end=False)
    env.reset(seed=0)
    yield env
    env.close()


def act(env: TrainFailEnv, tool: str, **arguments: Any) -> tuple[str, bool, bool, dict[str, Any]]:
    observation, _, terminated, truncated, info = env.step({"tool": tool, "arguments": arguments})
    return str(observation), terminated, truncated, info


JOB = "torchrun --standalone --nproc_per_node $NPROC -m exchange.run --tokens 4,8 --out outputs"


def test_a_hanging_job_returns_at_its_deadline_with_its_output_and_the_episode_goes_on(
    hang_env: TrainFailEnv,
) -> None:
    observation, terminated, truncated, _ = act(hang_env, "run_job", command=JOB, devices=2, timeout_s=30)
    assert observation.startswith("job ran on 2 CPU ranks\nkilled: timed out after 30 s"), observation[:300]
    # what the ranks printed before they blocked (rank 0 waits for rank 1's total, rank 1 in round 2)
    assert "rank 0: round 1 of 1" in observation and "rank 1: round 1 of 2" in observation, observation[-2000:]
    assert not terminated and not truncated
    assert leftovers() == [], "a rank of the hung job outlived its step"
    events = read_events(Path(hang_env.run_dir or "") / "ledger.jsonl")
    step = [e for e in events if e["event"] == "step"][-1]
    assert step["tool"] == "run_job" and step["timed_out"] is True and step["exit_code"] is None
    device = [e for e in events if e["event"] == "device"][-1]
    assert device["devices"] == 2 and device["released_at"] is not None
    # the devices are free again and the episode goes on
    observation, terminated, _, _ = act(hang_env, "run_job", command="echo again on $NPROC", devices=2, timeout_s=60)
    assert observation.endswith("again on 2") and not terminated


STACKS_JOB = (
    f"{JOB.replace('torchrun ', 'torchrun --tee 3 ')} > job.log 2>&1 & pid=$!; "
    "until grep -q 'rank 0: round 1 of 1' job.log && grep -q 'rank 1: round 1 of 2' job.log; do sleep 1; done; "
    "sleep 2; pkill -ABRT -P $pid; wait $pid; cat job.log"
)


def test_where_each_rank_waits_shows_in_the_jobs_output_on_sigabrt(hang_env: TrainFailEnv) -> None:
    observation, terminated, _, _ = act(hang_env, "run_job", command=STACKS_JOB, devices=2, timeout_s=300)
    assert "timed out" not in observation.splitlines()[1], observation[:400]
    # --tee 3 prefixes each rank's lines, so two stacks dumped at the same moment stay apart
    for rank in (0, 1):
        assert f"[default{rank}]:Fatal Python error: Aborted" in observation, observation[-3000:]
    lines = observation.splitlines()
    assert any(line.startswith("[default1]:") and "in all_reduce" in line for line in lines), observation[-3000:]
    assert any(line.startswith("[default0]:") and "in recv" in line for line in lines), observation[-3000:]
    assert 'exchange/run.py", line' in observation and not terminated
    assert leftovers() == []


def test_a_job_never_runs_past_the_episodes_budget(runtime: Runtime, bwrap_usable: None, tmp_path: Path) -> None:
    env = TrainFailEnv(
        case=load_case(ECHO_CASE),
        sandbox="bwrap",
        runs_root=tmp_path,
        grade_on_end=False,
        budgets={"wall_seconds": 25},
    )
    # env.py hands its budgets to the tool handlers (ToolHandlers(budgets=...)); set here until it does
    env._tools.budgets = env.budgets  # noqa: SLF001
    env.reset(seed=0)
    observation, terminated, truncated, _ = act(env, "run_job", command="sleep 600", devices=1, timeout_s=600)
    first = observation.splitlines()[1]
    assert first.startswith("killed: timed out after ") and "the episode's remaining wall-clock budget" in first
    assert int(first.split()[4]) <= 25
    assert truncated and not terminated  # the budget is spent: the episode ends, nothing crashed
    env.close()


# -- seeing where processes wait inside the sandbox --------------------------------------------

TRACER = r"""
import ctypes, os, sys
pid = int(sys.argv[1])
libc = ctypes.CDLL(None, use_errno=True)
PTRACE_ATTACH, PTRACE_DETACH = 16, 17
if libc.ptrace(PTRACE_ATTACH, pid, None, None) != 0:
    sys.exit(f"attach: {os.strerror(ctypes.get_errno())}")
os.waitpid(pid, 0)
libc.ptrace(PTRACE_DETACH, pid, None, None)
# what py-spy's non-blocking mode does: read the target's memory directly
class iovec(ctypes.Structure):
    _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]
start = next(int(line.split("-")[0], 16) for line in open(f"/proc/{pid}/maps") if line.split()[1].startswith("r"))
buffer = ctypes.create_string_buffer(16)
local, remote = iovec(ctypes.addressof(buffer), 16), iovec(start, 16)
read = libc.process_vm_readv(pid, ctypes.byref(local), 1, ctypes.byref(remote), 1, 0)
if read != 16:
    sys.exit(f"process_vm_readv: {os.strerror(ctypes.get_errno())}")
print("traced", buffer.raw[:4])
"""


@pytest.fixture(params=BACKENDS)
def box(request: pytest.FixtureRequest, runtime: Runtime, bwrap_usable: None, tmp_path: Path) -> Iterator[Sandbox]:
    if request.param == "docker":
        request.getfixturevalue("control_image")
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "tracer.py").write_text(TRACER)
    config = SandboxConfig(
        runtime=runtime,
        workspace=workspace,
        limits=Limits(memory_bytes=GiB, pids=256),
    )
    sandbox = create_sandbox(request.param, config)
    yield sandbox
    sandbox.close()


def test_a_process_can_trace_a_sibling_of_the_same_user_in_the_sandbox(box: Sandbox) -> None:
    """What ``py-spy dump --pid`` and ``gdb -p`` need: attach to a process that is not one's own
    child (an engineer's shell next to a hung rank)."""
    command = "python -c 'import time; time.sleep(60)' & target=$!; sleep 1; python tracer.py $target; kill $target"
    result = box.exec(["bash", "-c", command], timeout_s=60)
    assert result.exit_code == 0 and result.stdout.startswith("traced"), result.stdout + result.stderr


def test_the_sandbox_user_holds_no_capability(box: Sandbox) -> None:
    """Docker's container keeps SYS_PTRACE only for its seccomp profile (process_vm_readv, as
    above): the sandbox user's processes hold no capability at all, so tracing stays the kernel's
    same-user rule."""
    result = box.exec(["bash", "-c", "grep -E '^Cap(Inh|Prm|Eff|Amb):' /proc/self/status"], timeout_s=60)
    caps = dict(line.split(":\t") for line in result.stdout.splitlines())
    assert len(caps) == 4 and set(caps.values()) == {"0000000000000000"}, result.stdout + result.stderr
