"""The two experimental arms, in both isolating backends (bubblewrap and Docker).

``control``: TrainCheck is absent, every way of reaching it that can be stopped is stopped, and
every attempt is on record (``audit`` events: ``blocked`` reports from the blocker inside the
sandbox, ``mention`` reports from the env for tool calls that name it, and the host's own watch,
covered in test_audit_integrity.py). ``traincheck``: TrainCheck is installed, its manual is in the
sandbox, and its use (imports, commands) reaches the ledger with its device cost.
"""

from __future__ import annotations

import functools
import json
import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NoReturn

import pytest

from gym_trainfail.agent import load_agent
from gym_trainfail.arms import audit_category
from gym_trainfail.cases import CaseSpec
from gym_trainfail.env import TrainFailEnv
from gym_trainfail.episode import run_episode
from gym_trainfail.errors import SandboxUnavailableError
from gym_trainfail.grading import Grader, Receipt
from gym_trainfail.ledger import read_events
from gym_trainfail.registry import get_case
from gym_trainfail.revisions import RevisionLog
from gym_trainfail.runtimes import TRAINCHECK_COMMANDS, Runtime
from gym_trainfail.sandbox.docker_engine import connect
from gym_trainfail.sandbox.docker_image import build_image

BACKENDS = ["bwrap", pytest.param("docker", marks=pytest.mark.docker)]
BLOCKED = "TrainCheck is not available in this evaluation arm (control)"
MANUAL = "/opt/trainfail/TRAINCHECK.md"


def engine_unavailable(reason: str) -> NoReturn:
    """Skip on a developer's machine; fail in CI, where the engine is part of the job."""
    if os.environ.get("CI"):
        pytest.fail(f"CI runs the docker tests against a real engine (scripts/start-dockerd.sh); {reason}")
    pytest.skip(reason)


def require_image(arm: str) -> None:
    """Make sure the engine answers and holds the arm's image (built on first use)."""
    try:
        connect()
    except SandboxUnavailableError as exc:
        engine_unavailable(str(exc))
    _built(arm)


@functools.cache
def _built(arm: str) -> str:
    return build_image(arm, progress=lambda line: print(f"[images] {line}", file=sys.stderr)).tag


def arm_env(backend: str, arm: str, case: CaseSpec, runs: Path, **options: Any) -> TrainFailEnv:
    if backend == "docker":
        require_image(arm)
    return TrainFailEnv(case=case, arm=arm, sandbox=backend, runs_root=runs, **options)


def act(env: TrainFailEnv, tool: str, **arguments: Any) -> str:
    observation, _, terminated, truncated, _ = env.step({"tool": tool, "arguments": arguments})
    assert not (terminated or truncated), observation
    return observation


def ledger(env: TrainFailEnv) -> list[dict[str, Any]]:
    assert env.run_dir is not None
    return read_events(env.run_dir / "ledger.jsonl")


def hook_reports(events: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    """``audit`` events of reports of type ``kind`` from the arm's hooks inside the sandbox."""
    return [e for e in events if e["event"] == "audit" and e["source"] == "hook" and e["report"]["type"] == kind]


@pytest.fixture(params=BACKENDS)
def control_env(
    request: pytest.FixtureRequest, echo_case: CaseSpec, runtime: Runtime, bwrap_usable: None, tmp_path: Path
) -> Iterator[TrainFailEnv]:
    env = arm_env(request.param, "control", echo_case, tmp_path / "runs")
    env.reset(seed=0)
    yield env
    env.close()


@pytest.fixture(params=BACKENDS)
def treatment_env(
    request: pytest.FixtureRequest,
    echo_case: CaseSpec,
    traincheck_runtime: Runtime,
    bwrap_usable: None,
    tmp_path: Path,
) -> Iterator[TrainFailEnv]:
    env = arm_env(request.param, "traincheck", echo_case, tmp_path / "runs")
    yield env
    env.close()


# -- control: stopped, or detected and recorded -----------------------------------------------

#: (attempt, shell command, what the observation shows, blocked records it leaves).
STOPPED = [
    ("plain import", "python -c 'import traincheck'", BLOCKED, [("import", "traincheck")]),
    ("isolated mode", "python -I -c 'import traincheck'", BLOCKED, [("import", "traincheck")]),
    ("ignore environment", "python -E -c 'import traincheck'", BLOCKED, [("import", "traincheck")]),
    ("no user site", "python -s -c 'import traincheck'", BLOCKED, [("import", "traincheck")]),
    ("importlib", "python -c 'import importlib; importlib.import_module(\"traincheck\")'", BLOCKED,
     [("import", "traincheck")]),
    ("run as module", "python -m traincheck.collect_trace --help", BLOCKED, [("import", "traincheck")]),
    ("PYTHONPATH", "mkdir -p /tmp/p/traincheck && touch /tmp/p/traincheck/__init__.py && "
     "PYTHONPATH=/tmp/p python -c 'import traincheck'", BLOCKED, [("import", "traincheck")]),
    *[(name, f"{name} --help", BLOCKED, [("command", name)]) for name in TRAINCHECK_COMMANDS],
    # No network and no index: nothing to install from (the blocker may also refuse its files).
    ("pip install", "pip install traincheck", "traincheck", None),
    ("pip install --target", "pip install --target /tmp/t traincheck", "traincheck", None),
    # A fresh venv has no blocker, and -S skips site (and the blocker): both find the decoy on
    # PYTHONPATH, which fails the same way and reports (the host also sees it read).
    ("fresh venv", "python -m venv --without-pip /tmp/v && /tmp/v/bin/python -c 'import traincheck'",
     BLOCKED, [("import", "traincheck")]),
    ("no site", "python -S -c 'import traincheck'", BLOCKED, [("import", "traincheck")]),
]  # fmt: skip


def test_control_arm_stops_or_records_every_bypass(control_env: TrainFailEnv) -> None:
    env = control_env
    for attempt, command, shown, _ in STOPPED:
        observation = act(env, "shell", command=command, timeout_s=180)
        assert shown in observation, f"{attempt}: {observation}"
        assert not observation.startswith("exit code 0"), f"{attempt} succeeded: {observation}"
    # Nothing to copy: no TrainCheck file anywhere, only the blocker's four command stand-ins and
    # the decoy package.
    found = act(
        env, "shell", command="find / \\( -path /proc -o -path /sys \\) -prune -o -iname '*traincheck*' -print",
        timeout_s=300,
    )  # fmt: skip
    names = sorted(Path(line).name for line in found.split("\n")[2:] if line.startswith("/"))
    assert names == sorted([*TRAINCHECK_COMMANDS, "traincheck"]), found
    # A deliberate re-implementation cannot be stopped under -S, only seen.
    act(env, "write_file", path="mine/traincheck/__init__.py", content="ORIGIN = 'written by the agent'\n")
    assert BLOCKED in act(env, "shell", command="PYTHONPATH=/workspace/mine python -c 'import traincheck'")
    observation = act(
        env, "shell", command="PYTHONPATH=/workspace/mine python -S -c 'import traincheck as t; print(t.ORIGIN)'"
    )
    assert observation.endswith("written by the agent")

    events = ledger(env)
    blocked: dict[int, list[tuple[str, str]]] = {}
    for event in hook_reports(events, "blocked"):
        blocked.setdefault(event["step"], []).append((event["report"]["kind"], event["report"]["detail"]))
    for step, (attempt, _, _, expected) in enumerate(STOPPED, start=1):
        if expected is not None:
            assert blocked.get(step, []) == expected, attempt
    mentioned = {e["step"] for e in events if e["event"] == "audit" and e["source"] == "call"}
    assert mentioned == set(range(1, len(STOPPED) + 5)), "every tool call naming TrainCheck is on record"


def test_control_arm_has_no_manual(control_env: TrainFailEnv) -> None:
    assert "No such file" in act(control_env, "shell", command=f"cat {MANUAL}")


# -- treatment: installed, documented, measured -----------------------------------------------


def test_treatment_arm_has_manual_and_records_use_with_device_cost(treatment_env: TrainFailEnv) -> None:
    env = treatment_env
    observation, _ = env.reset(seed=0)
    assert MANUAL in observation and "optional" in observation
    shown = act(env, "shell", command=f"head -n 1 {MANUAL}; python -c 'import traincheck; print(traincheck.__file__)'")
    assert "# TrainCheck 0.2.0" in shown and "site-packages/traincheck/__init__.py" in shown, shown
    refused = act(env, "shell", command=f"echo x >> {MANUAL}")
    assert "Read-only file system" in refused or "Permission denied" in refused
    shown = act(env, "run_job", command="traincheck-check --help | grep -m 1 usage", devices=1, timeout_s=300)
    assert "usage: traincheck-check" in shown
    events = ledger(env)
    used = [(e["step"], e["tool"], e["report"]["kind"], e["report"]["detail"]) for e in hook_reports(events, "usage")]
    assert used == [(1, "shell", "import", "traincheck"), (3, "run_job", "command", "traincheck-check")]
    (job,) = [e for e in hook_reports(events, "usage") if e["tool"] == "run_job"]
    assert job["devices"] == 1
    (device,) = [e for e in events if e["event"] == "device"]
    assert device["devices"] == 1 and device["device_seconds"] > 0
    seen = {(e["step"], e["source"], audit_category(e)) for e in events if e["event"] == "audit"}
    assert {(1, "watch", "traincheck"), (1, "watch", "manual"), (3, "watch", "traincheck")} <= seen
    assert not {category for _, _, category in seen} & {"blocked", "mention"}


LAUNCHER = """cd /workspace
PYTHONPATH=/workspace torchrun --standalone --nproc_per_node 2 sft/tc_train.py \\
  --config configs/sft_tiny.yaml training.max_steps=2 training.output_dir=outputs/tc-run
"""


@pytest.mark.slow
@pytest.mark.docker
def test_traincheck_workflow_on_a_case_pipeline(traincheck_runtime: Runtime, tmp_path: Path) -> None:
    """collect → infer → check on DDPTokenAverage's own pipeline, as the manual describes.

    In Docker only (the production sandbox; 4–10 minutes of TrainCheck): the treatment arm's
    runtime and hooks are the same under bubblewrap, where the test above covers them."""
    env = arm_env("docker", "traincheck", get_case("TrainFail/DDPTokenAverage-v1"), tmp_path / "runs")
    env.reset(seed=0)
    try:
        act(env, "shell", command="sed '/^from __future__ import/d' sft/train.py > sft/tc_train.py")
        act(env, "write_file", path="tc_launch.sh", content=LAUNCHER)
        collect = act(
            env, "run_job", devices=2, timeout_s=1200,
            command="traincheck-collect -p sft/tc_train.py -s tc_launch.sh --model-tracker-style subclass "
            "--models-to-track model --output-dir /workspace/outputs/tc/ref",
        )  # fmt: skip
        assert "exit code 0" in collect, collect
        infer = act(
            env, "shell", timeout_s=1800,
            command="TQDM_DISABLE=1 traincheck-infer -f outputs/tc/ref -o outputs/tc/invariants.json",
        )  # fmt: skip
        assert infer.startswith("exit code 0"), infer
        check = act(
            env, "shell", timeout_s=900,
            command="traincheck-check -f outputs/tc/ref -i outputs/tc/invariants.json -o outputs/tc/check "
            "--no-html-report && cat outputs/tc/check/ref/violations_summary.json",
        )  # fmt: skip
        assert check.startswith("exit code 0"), check
        summary, _ = json.JSONDecoder().raw_decode(check[check.index("{") :])  # stderr may follow it
        assert set(summary) >= {"first_violation_step", "distinct_invariants_violated", "violations"}
        events = ledger(env)
    finally:
        env.close()
    commands = [
        (e["tool"], e["report"]["detail"]) for e in hook_reports(events, "usage") if e["report"]["kind"] == "command"
    ]
    assert commands == [
        ("run_job", "traincheck-collect"),
        ("shell", "traincheck-infer"),
        ("shell", "traincheck-check"),
    ]
    (device,) = [e for e in events if e["event"] == "device"]
    assert device["devices"] == 2 and device["device_seconds"] > 0


# -- the same episode, the same grades --------------------------------------------------------


@pytest.mark.slow
@pytest.mark.docker
def test_reference_episode_grades_the_same_in_docker_and_bwrap(
    runtime: Runtime, bwrap_usable: None, tmp_path: Path
) -> None:
    require_image("control")
    case = get_case("TrainFail/DDPTokenAverage-v1")
    started = time.time()
    result = run_episode(load_agent("reference"), case=case, sandbox="docker", run_dir=tmp_path / "run")
    assert (result.reward, result.reward_status) == (1.0, "graded")
    assert result.final_revision is not None
    workspace = tmp_path / "final"
    tree = RevisionLog(result.run_dir).checkout(result.final_revision, workspace)
    docker_grader = Grader(case, sandbox="docker")
    receipt = docker_grader.cached(tree.digest)
    if receipt is None or receipt.created < started:  # the reward came from an older receipt: grade again
        receipt = Grader(case, sandbox="docker", cache=False).grade_dir(workspace, tree=tree.digest)
    in_bwrap = Grader(case, sandbox="bwrap", cache=False).grade_dir(workspace, tree=tree.digest)
    assert _statuses(receipt) == _statuses(in_bwrap)
    assert receipt.passed and in_bwrap.passed


def _statuses(receipt: Receipt) -> list[tuple[str, str]]:
    return [(o.scenario, o.status) for o in receipt.outcomes]
