"""The Gymnasium env end to end on the fast echo case, with real bubblewrap."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import gymnasium
import pytest
from gymnasium.utils.env_checker import check_env

import gym_trainfail
from gym_trainfail.cases import CaseSpec
from gym_trainfail.env import TrainFailEnv, read_transcript
from gym_trainfail.episode import grade_run
from gym_trainfail.ledger import read_events, summarize
from gym_trainfail.runtimes import Runtime
from gym_trainfail.sandbox import Limits
from gym_trainfail.sandbox.base import GiB


def run_dir(env: gymnasium.Env) -> Path:
    directory = env.unwrapped.run_dir
    assert directory is not None
    return Path(directory)


def act(env: gymnasium.Env, tool: str, **arguments: Any) -> tuple[str, float, bool, bool, dict[str, Any]]:
    observation, reward, terminated, truncated, info = env.step({"tool": tool, "arguments": arguments})
    assert env.observation_space.contains(observation)
    return observation, float(reward), terminated, truncated, info


def test_first_observation_has_prompt_and_tools(echo_env: TrainFailEnv) -> None:
    observation, info = echo_env.reset(seed=0)
    assert echo_env.case.prompt in observation
    for spec in echo_env.tool_specs:
        assert f'"name": "{spec["function"]["name"]}"' in observation
    assert Path(info["run_dir"], "ledger.jsonl").exists()
    assert info == {"tool": None, "error": False, "step": 0, "run_dir": info["run_dir"]}


def test_check_env_passes_including_random_actions(echo_env: TrainFailEnv) -> None:
    check_env(echo_env, skip_render_check=True)


def test_repair_episode_reward_and_first_valid_revision(echo_env: TrainFailEnv) -> None:
    echo_env.reset(seed=0)
    assert act(echo_env, "submit")[0] == "revision 1 recorded"
    observation, *_ = act(echo_env, "shell", command="python report.py")
    assert observation == "exit code 0\n--- stdout ---\n41"
    act(echo_env, "edit_file", path="report.py", old_text="ANSWER = 41", new_text="ANSWER = 42")
    observation, reward, terminated, truncated, info = act(echo_env, "submit")
    assert (observation, reward, terminated, info["revision"]) == (
        "revision 2 recorded",
        0.0,
        False,
        2,
    )
    observation, reward, terminated, truncated, info = act(echo_env, "finish", summary="set the answer")
    assert observation == "episode finished; revision 2 is the final revision"
    assert (reward, terminated, truncated) == (1.0, True, False)
    assert info["reward_status"] == "graded" and info["final_revision"] == 2
    assert "status" not in observation and "pass" not in json.dumps(info)
    directory = run_dir(echo_env)
    # the operator learns why from the run directory, never from an observation or info
    result = json.loads((directory / "result.json").read_text())
    assert [(s["scenario"], s["status"]) for s in result["scenarios"]] == [("runs", "pass"), ("answer", "pass")]
    grades = grade_run(directory, sandbox="bwrap")
    assert [r.status for r in grades.revisions] == ["fail", "pass"]
    assert grades.first_valid is not None and grades.first_valid.revision == 2
    assert grades.unique_trees == 2
    assert (directory / "grades" / "summary.json").exists()


def test_unchanged_submission_gets_zero_and_no_submission_too(echo_env: TrainFailEnv) -> None:
    echo_env.reset(seed=0)
    act(echo_env, "submit")
    assert act(echo_env, "finish")[1] == 0.0
    echo_env.reset(seed=0)
    _, reward, terminated, _, info = act(echo_env, "finish")
    assert (reward, terminated, info["reward_status"]) == (0.0, True, "no-revision")


def test_revisions_are_immutable_and_outside_the_sandbox(echo_env: TrainFailEnv) -> None:
    _, info = echo_env.reset(seed=0)
    act(echo_env, "write_file", path="report.py", content="ANSWER = 42\nprint(ANSWER)\n")
    act(echo_env, "submit")
    act(echo_env, "shell", command="rm -rf /workspace/* && echo gone")
    observation, *_ = act(echo_env, "list_files")
    assert observation == "./ is empty"
    assert act(echo_env, "finish")[1] == 1.0  # the recorded revision, not the emptied workspace


@pytest.mark.parametrize(
    ("action", "expected"),
    [
        ("{oops", "error: the action is not valid JSON"),
        ('{"tool": "teleport", "arguments": {}}', "error: unknown tool 'teleport'"),
        (
            {"tool": "read_file", "arguments": {}},
            "error: read_file: missing required argument(s) ['path']",
        ),
        (
            {"tool": "read_file", "arguments": {"path": "x", "mode": "r"}},
            "error: read_file: unexpected argument(s) ['mode']",
        ),
        (
            {"tool": "read_file", "arguments": {"path": "../../etc/passwd"}},
            "error: '../../etc/passwd' resolves outside",
        ),
        (
            {"tool": "read_file", "arguments": {"path": "/etc/passwd"}},
            "error: '/etc/passwd' is outside the workspace",
        ),
        (
            {"tool": "run_job", "arguments": {"command": "true", "devices": 99}},
            "error: requested 99 devices but this node has",
        ),
        ("x" * 100_000, "error: the action is not valid JSON"),
    ],
)
def test_bad_actions_give_error_observations_and_the_episode_goes_on(
    echo_env: TrainFailEnv, action: object, expected: str
) -> None:
    echo_env.reset(seed=0)
    observation, reward, terminated, truncated, info = echo_env.step(action)
    assert observation.startswith(expected), observation
    assert (reward, terminated, truncated, info["error"]) == (0.0, False, False, True)
    assert act(echo_env, "shell", command="echo still here")[0].endswith("still here")
    events = read_events(run_dir(echo_env) / "ledger.jsonl")
    assert [e["status"] for e in events if e["event"] == "step"] == ["error", "ok"]


def test_symlink_escape_binary_and_unicode_output(echo_env: TrainFailEnv) -> None:
    echo_env.reset(seed=0)
    act(
        echo_env,
        "shell",
        command="ln -s /etc/passwd pw; ln -s / root; head -c 64 /dev/urandom > blob.bin",
    )
    assert act(echo_env, "read_file", path="pw")[0].startswith("error: 'pw' resolves outside the workspace")
    assert act(echo_env, "write_file", path="root/tmp/x", content="x")[0].startswith(
        "error: 'root/tmp/x' resolves outside"
    )
    observation = act(echo_env, "read_file", path="blob.bin")[0]
    assert "binary file" in observation or "not UTF-8" in observation
    observation = act(echo_env, "shell", command=r"printf 'caf\xc3\xa9 \xf0\x9f\x94\xa5 \x00\x01\xff\r\n'")[0]
    assert "café" in observation and "\\U0001f525" in observation and "\\x00" in observation


def test_long_output_endless_command_and_no_secrets(echo_env: TrainFailEnv) -> None:
    echo_env.reset(seed=0)
    observation = act(echo_env, "shell", command="yes | head -c 1000000")[0]
    assert "bytes of output omitted" in observation and len(observation) < 60_000
    observation, _, terminated, _, info = act(echo_env, "shell", command="sleep 600", timeout_s=1)
    assert observation.startswith("killed: timed out after 1 s") and not terminated
    observation = act(echo_env, "shell", command="env; cat /proc/1/environ 2>/dev/null")[0]
    assert "OPENAI_API_KEY" not in observation and "sk-test-host-secret" not in observation


def test_fork_bomb_and_memory_hog_are_contained(
    echo_case: CaseSpec, runtime: Runtime, bwrap_usable: None, tmp_path: Path
) -> None:
    env = TrainFailEnv(
        case=echo_case,
        sandbox="bwrap",
        runs_root=tmp_path,
        limits=Limits(memory_bytes=GiB, pids=200),
    )
    env.reset(seed=0)
    observation = act(env, "shell", command="python -c 'x = bytearray(3 << 30)'")[0]
    assert observation.startswith("killed: out of memory (limit 1 GiB)")
    observation = act(env, "shell", command="bomb() { bomb | bomb & }; bomb; sleep 3", timeout_s=20)[0]
    assert act(env, "shell", command="echo alive")[0] == "exit code 0\n--- stdout ---\nalive"
    env.close()


def test_sandbox_lost_between_steps_is_restored(echo_env: TrainFailEnv) -> None:
    _, info = echo_env.reset(seed=0)
    act(echo_env, "write_file", path="notes.txt", content="kept")
    act(echo_env, "submit")
    workspace = run_dir(echo_env) / "workspace"
    subprocess.run(["umount", "--lazy", str(workspace)], check=False)  # its disk budget's filesystem goes too
    shutil.rmtree(workspace)  # the sandbox's workspace vanishes
    observation, reward, terminated, _, info = act(echo_env, "shell", command="cat notes.txt")
    assert observation.startswith("error: the sandbox stopped unexpectedly") and "after step 1" in observation
    assert not terminated
    assert act(echo_env, "shell", command="cat notes.txt")[0].endswith("kept")
    events = read_events(run_dir(echo_env) / "ledger.jsonl")
    assert [e["action"] for e in events if e["event"] == "sandbox"] == ["restored"]
    assert [e["revision"] for e in events if e["event"] == "submit"] == [1]
    assert (run_dir(echo_env) / "revisions" / "1.json").exists()


def test_budget_truncates_and_grades_last_revision(
    echo_case: CaseSpec, runtime: Runtime, bwrap_usable: None, tmp_path: Path
) -> None:
    env = TrainFailEnv(case=echo_case, sandbox="bwrap", runs_root=tmp_path, budgets={"steps": 3})
    env.reset(seed=0)
    act(env, "edit_file", path="report.py", old_text="41", new_text="42")
    act(env, "submit")
    _, reward, terminated, truncated, info = act(env, "list_files")
    assert (terminated, truncated, reward, info["reward_status"]) == (False, True, 1.0, "graded")
    observation, *_ = act(env, "list_files")
    assert observation.startswith("error: this episode has ended")
    events = read_events(run_dir(env) / "ledger.jsonl")
    assert events[-1]["event"] == "finish" and events[-1]["reason"] == "budget:steps"
    env.close()


def test_usage_and_suspensions_reach_the_ledger(echo_env: TrainFailEnv) -> None:
    _, info = echo_env.reset(seed=0)
    echo_env.record_usage(1200, 300, 1000)
    echo_env.record_usage(800, 100, 0, estimated=True)
    echo_env.record_suspension(1.0, 1.0, "provider 429")
    act(echo_env, "run_job", command="echo $NPROC $TRAINFAIL_DEVICES $TRAINFAIL_BACKEND", devices=2)
    act(echo_env, "finish")
    summary = summarize(read_events(run_dir(echo_env) / "ledger.jsonl"))
    assert (summary.input_tokens, summary.output_tokens, summary.total_tokens) == (2000, 400, 2400)
    assert summary.tokens_estimated and summary.solver_device_seconds > 0
    device = [e for e in read_events(run_dir(echo_env) / "ledger.jsonl") if e["event"] == "device"]
    assert device[0]["devices"] == 2 and device[0]["role"] == "solver"


def test_run_job_sees_its_devices(echo_env: TrainFailEnv) -> None:
    echo_env.reset(seed=0)
    observation = act(echo_env, "run_job", command="echo $NPROC $TRAINFAIL_DEVICES $TRAINFAIL_BACKEND", devices=2)[0]
    assert observation == "job ran on 2 CPU ranks\nexit code 0\n--- stdout ---\n2 2 gloo"


def test_gymnasium_make_registered_case(runtime: Runtime, bwrap_usable: None, tmp_path: Path) -> None:
    env = gymnasium.make("TrainFail/DDPTokenAverage-v1", sandbox="bwrap", runs_root=tmp_path)
    observation, _ = env.reset(seed=0)
    assert "README.md" in act(env, "list_files")[0]
    assert isinstance(env.unwrapped, gym_trainfail.TrainFailEnv)
    env.close()


def test_interrupted_episode_resumes_from_its_run_dir(
    echo_case: CaseSpec, runtime: Runtime, bwrap_usable: None, tmp_path: Path
) -> None:
    first = TrainFailEnv(case=echo_case, sandbox="bwrap", runs_root=tmp_path)
    first.reset(seed=0)
    act(first, "edit_file", path="report.py", old_text="41", new_text="42")
    act(first, "run_job", command="echo ran", devices=1)
    directory = run_dir(first)
    (directory / "workspace" / "report.py").write_text("half-written by a crash")  # not a completed step
    del first  # the process dies: no finish, no close

    second = TrainFailEnv(case=echo_case, sandbox="bwrap")
    observation, info = second.reset(options={"resume": directory})
    assert info["resumed"] and info["step"] == 2 and echo_case.prompt in observation
    assert act(second, "shell", command="python report.py")[0].endswith("42")
    assert act(second, "submit")[0] == "revision 1 recorded"
    _, reward, terminated, _, info = act(second, "finish")
    assert (reward, terminated, info["step"]) == (1.0, True, 5)
    events = read_events(directory / "ledger.jsonl")
    kinds = [e["event"] for e in events]
    assert kinds.count("reset") == 1 and "resume" in kinds
    assert [e["reason"] for e in events if e["event"] == "suspension"] == ["interrupted"]
    assert sum(1 for e in events if e["event"] == "device") == 1  # the finished job is not run again
    transcript = [(r["index"], r["tool"]) for r in read_transcript(directory)]
    assert transcript == [(1, "edit_file"), (2, "run_job"), (3, "shell"), (4, "submit"), (5, "finish")]
    with pytest.raises(gym_trainfail.TrainFailError, match="has already finished"):
        TrainFailEnv(case=echo_case, sandbox="bwrap").reset(options={"resume": directory})


def test_control_arm_blocks_and_records_traincheck_attempts(echo_env: TrainFailEnv) -> None:
    echo_env.reset(seed=0)
    observation = act(echo_env, "shell", command="python -I -c 'import traincheck'")[0]
    assert "TrainCheck is not available in this evaluation arm (control)" in observation
    observation = act(echo_env, "run_job", command="traincheck-collect --help; python -m traincheck.infer", devices=1)[
        0
    ]
    assert observation.count("not available in this evaluation arm") == 2
    act(echo_env, "write_file", path="tc/__init__.py", content="# my own traincheck\n")
    act(echo_env, "shell", command="rm -rf /workspace/tc")  # erasing the workspace cannot erase the record
    events = read_events(run_dir(echo_env) / "ledger.jsonl")
    audits = [e for e in events if e["event"] == "audit"]
    hooks = [e for e in audits if e["source"] == "hook"]
    blocked = [(e["step"], e["tool"], e["report"]["kind"], e["report"]["detail"]) for e in hooks]
    assert blocked == [
        (1, "shell", "import", "traincheck"),
        (2, "run_job", "command", "traincheck-collect"),
        (2, "run_job", "import", "traincheck"),
    ]
    mentions = [(e["step"], e["tool"], e["report"]["argument"]) for e in audits if e["source"] == "call"]
    assert mentions == [(1, "shell", "command"), (2, "run_job", "command"), (3, "write_file", "content")]
