"""The Docker backend against a real engine: isolation, limits, cleanup, the audit channel, GPU jobs.

Engine tests are marked ``docker``. Without an engine they are skipped on a developer's machine
and fail under CI (``CI`` set): ``.ci/run`` starts a private engine (scripts/start-dockerd.sh).
The first one builds the control runtime image (minutes, once per engine). Security tests that
both isolating backends must pass run parametrized over ``bwrap`` and ``docker``.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tarfile
import textwrap
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NoReturn

import docker
import docker.errors
import pytest
import requests.exceptions

from gym_trainfail.arms import get_arm
from gym_trainfail.cases import CaseSpec, load_case
from gym_trainfail.devices import DevicePool
from gym_trainfail.env import TrainFailEnv
from gym_trainfail.errors import SandboxLostError, SandboxUnavailableError
from gym_trainfail.grading import Grader
from gym_trainfail.ledger import read_events
from gym_trainfail.runtimes import Runtime
from gym_trainfail.sandbox import (
    Device,
    Limits,
    Mount,
    Sandbox,
    SandboxConfig,
    create_sandbox,
    docker_engine,
    resolve_backend,
)
from gym_trainfail.sandbox import docker as docker_backend
from gym_trainfail.sandbox import docker_image as images
from gym_trainfail.sandbox.base import GiB
from gym_trainfail.sandbox.docker import (
    AUDIT_PATH,
    LAUNCH_SCRIPT,
    ContainerSpec,
    DockerSandbox,
    container_kwargs,
    exec_command,
)
from gym_trainfail.sandbox.docker_engine import (
    OWNER_LABEL,
    SANDBOX_LABEL,
    Engine,
    FrameDecoder,
    connect,
    owner_alive,
    owner_label,
)
from gym_trainfail.sandbox.docker_image import RuntimeImage, build_image
from gym_trainfail.sandbox.environment import sandbox_env
from tests.conftest import make_echo_group_case
from tests.test_batch import check_fixture_cache

ISOLATING = ["bwrap", pytest.param("docker", marks=pytest.mark.docker)]
SMALL = Limits(memory_bytes=GiB, pids=256, output_bytes=4000)


def engine_unavailable(reason: str) -> NoReturn:
    """Skip on a developer's machine; fail in CI, where the engine is part of the job."""
    if os.environ.get("CI"):
        pytest.fail(f"CI runs the docker tests against a real engine (scripts/start-dockerd.sh); {reason}")
    pytest.skip(reason)


@pytest.fixture(scope="session")
def docker_engine_session() -> Engine:
    try:
        return connect()
    except SandboxUnavailableError as exc:
        engine_unavailable(str(exc))


@pytest.fixture(scope="session")
def control_image(docker_engine_session: Engine, runtime: Runtime) -> RuntimeImage:
    """The control runtime image (built on first use: minutes on a fresh engine)."""
    del docker_engine_session, runtime
    return build_image("control", progress=lambda line: print(f"[images] {line}", file=sys.stderr))


def make_sandbox(backend: str, runtime: Runtime, workspace: Path, **config: Any) -> Sandbox:
    """A sandbox over ``workspace`` (created), with small limits unless given."""
    workspace.mkdir(parents=True, exist_ok=True)
    config.setdefault("limits", SMALL)
    return create_sandbox(backend, SandboxConfig(runtime=runtime, workspace=workspace, **config))


@pytest.fixture
def box(control_image: RuntimeImage, runtime: Runtime, tmp_path: Path) -> Iterator[DockerSandbox]:
    sandbox = make_sandbox("docker", runtime, tmp_path / "ws")
    assert isinstance(sandbox, DockerSandbox)
    yield sandbox
    sandbox.close()


@pytest.fixture(params=ISOLATING)
def isolated(request: pytest.FixtureRequest, runtime: Runtime, bwrap_usable: None, tmp_path: Path) -> Iterator[Sandbox]:
    """Each isolating backend in turn (docker only where an engine and its image are usable)."""
    if request.param == "docker":
        request.getfixturevalue("control_image")
    sandbox = make_sandbox(request.param, runtime, tmp_path / "ws")
    yield sandbox
    sandbox.close()


def own_containers(engine: Engine) -> list[str]:
    """Names of the sandbox containers this test process owns."""
    mine = owner_label()
    return [c.name or "" for c in docker_engine.sandbox_containers(engine) if c.labels.get(OWNER_LABEL) == mine]


# -- without an engine ------------------------------------------------------------------------


def spec(tmp_path: Path, gpus: tuple[int, ...] = ()) -> ContainerSpec:
    return ContainerSpec(
        image="sha256:abc",
        name="trainfail-episode-1234",
        uid=1000,
        workspace=tmp_path / "ws",
        ctl_dir=tmp_path / "ctl",
        limits=Limits(memory_bytes=2 * GiB, pids=300),
        mounts=(Mount(tmp_path / "grader", "/grader"), Mount(tmp_path / "io", "/io", writable=True)),
        labels={SANDBOX_LABEL: "1"},
        gpus=gpus,
    )


def test_container_shape(tmp_path: Path) -> None:
    kwargs = container_kwargs(spec(tmp_path))
    assert kwargs["network_mode"] == "none" and kwargs["read_only"] is True
    assert kwargs["user"] == "1000:1000" and kwargs["cap_drop"] == ["ALL"] and kwargs["cap_add"] == ["SYS_PTRACE"]
    assert kwargs["security_opt"] == ["no-new-privileges"] and kwargs["auto_remove"] is True
    assert (kwargs["mem_limit"], kwargs["memswap_limit"], kwargs["pids_limit"]) == (2 * GiB, 2 * GiB, 300)
    assert kwargs["tmpfs"] == {"/tmp": f"rw,exec,nosuid,nodev,mode=1777,size={GiB // 2}"}  # a quarter of memory
    assert kwargs["environment"] == {"NVIDIA_VISIBLE_DEVICES": "void"} and kwargs["device_requests"] == []
    mounts = {m["Target"]: (m["Source"], m["ReadOnly"]) for m in kwargs["mounts"]}
    assert mounts == {
        "/workspace": (str(tmp_path / "ws"), False),
        "/run/trainfail": (str(tmp_path / "ctl"), True),
        "/grader": (str(tmp_path / "grader"), True),
        "/io": (str(tmp_path / "io"), False),
    }


def test_gpu_job_requests_exactly_its_devices(tmp_path: Path, runtime: Runtime) -> None:
    kwargs = container_kwargs(spec(tmp_path, gpus=(1, 3)))
    (request,) = kwargs["device_requests"]
    assert (request["Driver"], request["DeviceIDs"], request["Capabilities"]) == ("nvidia", ["1", "3"], [["gpu"]])
    assert "NVIDIA_VISIBLE_DEVICES" not in kwargs["environment"]
    config = SandboxConfig(runtime=runtime, workspace=tmp_path)
    env = sandbox_env(config, "/workspace", (Device("gpu", 1), Device("gpu", 3)), audit_fd=3)
    # Inside the job's container only the requested GPUs exist, numbered from 0.
    assert (env["CUDA_VISIBLE_DEVICES"], env["TRAINFAIL_BACKEND"], env["NPROC"]) == ("0,1", "nccl", "2")


def test_commands_are_argument_lists() -> None:
    argv = ["echo", "a b; rm -rf /", "$(id)"]
    assert exec_command(argv) == ["/bin/sh", "-c", LAUNCH_SCRIPT, AUDIT_PATH, *argv]


def test_frames_split_across_reads() -> None:
    decoder = FrameDecoder()
    data = b"\x01\x00\x00\x00\x00\x00\x00\x03out" + b"\x02\x00\x00\x00\x00\x00\x00\x03err"
    assert decoder.feed(data[:5]) == []
    assert decoder.feed(data[5:14]) == [(1, b"out")]
    assert decoder.feed(data[14:]) == [(2, b"err")]


def test_owner_labels_tell_dead_owners() -> None:
    assert owner_alive(owner_label())
    host = owner_label().split(":")[0]
    assert not owner_alive(f"{host}:{2**22 + 7}:1")  # beyond pid_max: no such process
    assert owner_alive("another-host:1:1")  # never reap what another machine owns


def test_no_engine_says_docker_host_and_bwrap(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")
    with pytest.raises(SandboxUnavailableError) as caught:
        connect()
    message = str(caught.value)
    assert "DOCKER_HOST='unix:///nonexistent/docker.sock'" in message and "sandbox='bwrap'" in message
    assert docker_backend.probe() == message
    with pytest.raises(SandboxUnavailableError, match="sandbox 'docker' is not usable here: no Docker engine"):
        resolve_backend("docker")


def test_connection_error_from_a_pinned_client_is_caught_too(monkeypatch: pytest.MonkeyPatch) -> None:
    class PinnedClient:
        def ping(self) -> bool:
            raise requests.exceptions.ConnectionError("Connection refused")

    monkeypatch.setenv("DOCKER_HOST", "tcp://127.0.0.1:9")
    monkeypatch.setattr(docker, "from_env", lambda **_: PinnedClient())
    with pytest.raises(SandboxUnavailableError, match=r"DOCKER_HOST='tcp://127.0.0.1:9' \(Connection refused\)"):
        connect()


def test_control_image_context_holds_the_builder_and_nothing_of_traincheck(tmp_path: Path) -> None:
    wheel = tmp_path / "torch-2.13.0+cpu-cp311-cp311-manylinux_2_28_x86_64.whl"
    wheel.write_bytes(b"not really a wheel")
    context = tmp_path / "context.tar"
    images.write_context(context, get_arm("control"), [wheel])
    with tarfile.open(context) as tar:
        names = set(tar.getnames())
    assert {"Dockerfile", "sandbox_init.py", "builder/gym_trainfail/runtimes.py"} <= names
    assert f"builder/wheels/{wheel.name}" in names
    assert "builder/containers/runtime/requirements-base.txt" in names
    assert "builder/containers/runtime/blocker/_trainfail_blocker.pth" in names
    assert [name for name in names if "traincheck" in name.lower() or "tracker" in name] == []


def test_image_tags_follow_their_inputs(runtime: Runtime) -> None:
    control, treatment = get_arm("control"), get_arm("traincheck")
    packages = ["torch==2.13.0+cpu"]
    first = images.image_inputs(control, runtime, packages, "sha256:base1")
    assert first == images.image_inputs(control, runtime, packages, "sha256:base1")
    assert first != images.image_inputs(control, runtime, packages, "sha256:base2")
    assert first != images.image_inputs(control, runtime, ["torch==2.13.1"], "sha256:base1")
    assert first != images.image_inputs(treatment, runtime, packages, "sha256:base1")
    assert images.image_tag(control, first) == f"gym-trainfail/runtime:control-{first[:16]}"


# -- both isolating backends ------------------------------------------------------------------


def test_no_network_non_root_no_host_secrets(isolated: Sandbox) -> None:
    result = isolated.exec(
        ["python", "-c", "import socket, os; print(os.getuid());"
         "s = socket.socket(); s.settimeout(3); s.connect(('1.1.1.1', 80))"],
        timeout_s=60,
    )  # fmt: skip
    assert result.stdout.strip() == "1000"
    assert result.exit_code != 0 and "Network is unreachable" in result.stderr
    env = isolated.exec(["bash", "-c", "env; cat /proc/1/environ 2>/dev/null"], timeout_s=30).stdout
    assert "OPENAI_API_KEY" not in env and "sk-test-host-secret" not in env


def test_host_grader_and_other_workspaces_are_out_of_reach(isolated: Sandbox, tmp_path: Path) -> None:
    secret = Path.home() / ".trainfail-test-secret"
    secret.write_text("secret")
    other = tmp_path / "other-episode" / "workspace"
    other.mkdir(parents=True)
    (other / "notes.txt").write_text("other episode")
    grader = Path(__file__).resolve().parent.parent / "envs" / "ddp_token_average" / "grader" / "reference.patch"
    try:
        result = isolated.exec(
            ["bash", "-c", 'for p in "$@"; do cat "$p" 2>&1; done; ls /root 2>&1; cat /etc/shadow 2>&1', "sh",
             str(secret), str(other / "notes.txt"), str(grader), str(Path.home() / ".docker" / "config.json")],
            timeout_s=30,
        )  # fmt: skip
        assert "secret" not in result.stdout.replace(".trainfail-test-secret", "")
        assert "other episode" not in result.stdout and "diff --git" not in result.stdout
        assert result.stdout.count("No such file or directory") + result.stdout.count("Permission denied") >= 5
        assert "root:" not in result.stdout
    finally:
        secret.unlink()


def test_writes_only_in_workspace_and_tmp(isolated: Sandbox) -> None:
    runtime_root = isolated.exec(["python", "-c", "import sys; print(sys.prefix)"], timeout_s=60).stdout.strip()
    result = isolated.exec(
        ["bash", "-c", 'touch "$1/evil"; touch /usr/evil; echo ok > /workspace/f; echo t > /tmp/t && cat /tmp/t',
         "sh", runtime_root],
        timeout_s=30,
    )  # fmt: skip
    assert result.stderr.count("Read-only file system") == 2
    assert result.stdout == "t\n"
    assert (isolated.host_workspace / "f").read_text() == "ok\n"


def test_scratch_space_lasts_one_command(isolated: Sandbox) -> None:
    assert isolated.exec(["bash", "-c", "echo x > /tmp/left; echo y > /dev/shm/left"], timeout_s=30).ok
    after = isolated.exec(["bash", "-c", "ls /tmp /dev/shm"], timeout_s=30)
    assert "left" not in after.stdout


def test_fork_bomb_and_memory_hog_are_contained(isolated: Sandbox) -> None:
    hog = isolated.exec(["python", "-c", "x = bytearray(3 << 30); print('allocated')"], timeout_s=60)
    assert hog.oom_killed and hog.exit_code != 0 and "allocated" not in hog.stdout
    started = time.monotonic()
    bomb = isolated.exec(["bash", "-c", "bomb() { bomb | bomb & }; bomb; sleep 2; echo survived"], timeout_s=20)
    assert time.monotonic() - started < 45
    assert bomb.exit_code is not None or bomb.timed_out
    after = isolated.exec(["echo", "alive"], timeout_s=30)
    assert after.ok and after.stdout == "alive\n"


def test_audit_records_reach_the_host_and_cannot_be_read_back(isolated: Sandbox) -> None:
    record = {"type": "usage", "kind": "import", "detail": "probe", "argv": ["-c"], "pid": 1}
    write = (
        "import json, os; fd = int(os.environ['TRAINFAIL_AUDIT_FD']); "
        f"os.write(fd, (json.dumps({record!r}) + '\\n{{\"event\": \"forged\"}}\\n').encode()); print('written')"
    )
    result = isolated.exec(["python", "-c", write], timeout_s=60)
    assert result.ok and result.audit == (record,) and result.audit_rejected == 1  # the schema: sandbox/audit.py
    assert isolated.exec(["true"], timeout_s=30).audit == ()


# -- docker only ------------------------------------------------------------------------------


@pytest.mark.docker
def test_runs_in_workspace_with_the_image_runtime(box: DockerSandbox) -> None:
    result = box.exec(["python", "-c", "import os, sys, torch; print(os.getcwd()); print(sys.prefix)"], timeout_s=120)
    assert result.ok, result.stderr
    cwd, prefix = result.stdout.split()
    assert cwd == "/workspace" and prefix == f"{box.container_runtime}/venv"
    assert box.image.runtime_digest == box.config.runtime.digest  # the same runtime as the host's
    assert box.exec(["cat"], timeout_s=30, stdin=b"piped\n").stdout == "piped\n"


@pytest.mark.docker
def test_output_is_capped_and_files_stay_writable(box: DockerSandbox) -> None:
    result = box.exec(["python", "-c", "print('x' * 100000)"], timeout_s=60)
    assert result.output_truncated and "bytes of output omitted (limit 4000 bytes per stream)" in result.stdout
    (box.host_workspace / "host.txt").write_text("from the host\n")  # as file tools write
    appended = box.exec(["bash", "-c", "echo more >> host.txt && cat host.txt"], timeout_s=30)
    assert appended.ok and appended.stdout == "from the host\nmore\n"
    blocked = box.exec(["cat", AUDIT_PATH], timeout_s=30)
    assert blocked.exit_code != 0 and "Permission denied" in blocked.stderr  # records are write-only


@pytest.mark.docker
def test_mounts_read_only_and_writable(control_image: RuntimeImage, runtime: Runtime, tmp_path: Path) -> None:
    private, io = tmp_path / "private", tmp_path / "io"
    private.mkdir()
    io.mkdir()
    (private / "data.txt").write_text("grader data")
    sandbox = make_sandbox(
        "docker", runtime, tmp_path / "ws", mounts=(Mount(private, "/grader"), Mount(io, "/io", writable=True))
    )
    try:
        result = sandbox.exec(
            ["bash", "-c", "cat /grader/data.txt; echo x > /grader/y; echo out > /io/o"], timeout_s=30
        )
    finally:
        sandbox.close()
    assert "grader data" in result.stdout and "Read-only file system" in result.stderr
    assert (io / "o").read_text() == "out\n" and not (private / "y").exists()


@pytest.mark.docker
def test_container_killed_between_commands_is_reported(box: DockerSandbox) -> None:
    box.engine.client.api.kill(box._box.id)
    with pytest.raises(SandboxLostError):
        box.exec(["true"], timeout_s=30)
    with pytest.raises(SandboxLostError):
        box.check_alive()


@pytest.mark.docker
def test_container_killed_during_a_command_is_reported(box: DockerSandbox) -> None:
    killer = threading.Timer(1.0, box.engine.client.api.kill, args=(box._box.id,))
    killer.start()
    started = time.monotonic()
    with pytest.raises(SandboxLostError):
        box.exec(["sleep", "60"], timeout_s=120)
    killer.join()
    assert time.monotonic() - started < 30


@pytest.mark.docker
def test_close_leaves_no_container(control_image: RuntimeImage, runtime: Runtime, tmp_path: Path) -> None:
    engine = connect()
    sandbox = make_sandbox("docker", runtime, tmp_path / "ws")
    assert isinstance(sandbox, DockerSandbox) and sandbox._box.spec.name in own_containers(engine)
    ctl = sandbox._box.spec.ctl_dir
    sandbox.close()
    assert sandbox._box.spec.name not in own_containers(engine) and not ctl.exists()


_CHILD = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from gym_trainfail.runtimes import find_runtime
    from gym_trainfail.sandbox import SandboxConfig, create_sandbox
    workspace = Path(sys.argv[1]); workspace.mkdir()
    box = create_sandbox("docker", SandboxConfig(runtime=find_runtime("control"), workspace=workspace))
    print(box._box.spec.name, flush=True)
    time.sleep(600)
    """
)


@pytest.mark.docker
@pytest.mark.parametrize("how", [signal.SIGKILL, signal.SIGTERM], ids=["SIGKILL", "SIGTERM"])
def test_interrupted_host_process_leaves_no_container(
    control_image: RuntimeImage, tmp_path: Path, how: signal.Signals
) -> None:
    engine = connect()
    child = subprocess.Popen(
        [sys.executable, "-c", _CHILD, str(tmp_path / "ws")], stdout=subprocess.PIPE, text=True, env=dict(os.environ)
    )
    assert child.stdout is not None
    name = child.stdout.readline().strip()
    assert name.startswith("trainfail-episode-")
    engine.client.containers.get(name)
    child.send_signal(how)
    child.wait(timeout=60)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            engine.client.containers.get(name)
        except docker.errors.NotFound:
            break
        time.sleep(0.2)
    else:
        pytest.fail(f"{name} survived its owner ({how.name})")
    docker_engine.reap_stale(engine, docker_backend.ctl_root(), force=True)
    assert not (docker_backend.ctl_root() / name).exists()  # nor its channel folder, once a process reaps


@pytest.mark.docker
def test_stale_containers_are_reaped(control_image: RuntimeImage) -> None:
    engine = connect()
    host = owner_label().split(":")[0]
    stale = engine.client.containers.create(
        control_image.id, labels={SANDBOX_LABEL: "1", OWNER_LABEL: f"{host}:{2**22 + 7}:1"}, network_mode="none"
    )
    assert stale.name in docker_engine.reap_stale(engine, force=True)
    with pytest.raises(docker.errors.NotFound):
        engine.client.containers.get(stale.id or "")


@pytest.mark.docker
def test_gpu_jobs_run_in_their_own_container(box: DockerSandbox, monkeypatch: pytest.MonkeyPatch) -> None:
    # No GPU here: the device request is left out, everything else is the real GPU-job path.
    monkeypatch.setattr(docker_backend, "device_requests", lambda gpus: [])
    assert box.exec(["touch", "/tmp/episode-container"], timeout_s=30).ok
    gpus = (Device("gpu", 0), Device("gpu", 1))
    script = "echo $CUDA_VISIBLE_DEVICES $TRAINFAIL_BACKEND; ls /tmp/episode-container 2>&1; echo job > job.txt"
    result = box.exec(["bash", "-c", script], timeout_s=60, devices=gpus)
    lines = result.stdout.splitlines()
    assert lines[0] == "0,1 nccl" and "No such file" in lines[1], result  # another container than the episode's
    assert (box.host_workspace / "job.txt").read_text() == "job\n"
    assert [n for n in own_containers(box.engine) if "-job-" in n] == []


@pytest.mark.docker
def test_env_gpu_job_device_seconds_cover_the_job_container(
    echo_case: CaseSpec, control_image: RuntimeImage, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("gym_trainfail.devices.detect_gpus", lambda: [0, 1])
    monkeypatch.setattr(docker_backend, "device_requests", lambda gpus: [])
    pool = DevicePool(kind="gpu", root=tmp_path / "devices")
    env = TrainFailEnv(case=echo_case, sandbox="docker", runs_root=tmp_path / "runs", device_pool=pool)
    env.reset(seed=0)
    observation, *_ = env.step(
        {"tool": "run_job", "arguments": {"command": "echo $CUDA_VISIBLE_DEVICES", "devices": 2}}
    )
    assert observation == "job ran on 2 GPUs\nexit code 0\n--- stdout ---\n0,1"
    directory = env.run_dir
    env.close()
    assert directory is not None
    (device,) = [e for e in read_events(directory / "ledger.jsonl") if e["event"] == "device"]
    lifetime = device["released_at"] - device["started_at"]
    assert device["kind"] == "gpu" and device["devices"] == 2 and device["ids"] == [0, 1]
    assert device["device_seconds"] == pytest.approx(2 * lifetime) and lifetime > 0.2  # start-up + clean-up


@pytest.mark.docker
def test_killed_container_mid_episode_is_restored(
    echo_case: CaseSpec, control_image: RuntimeImage, tmp_path: Path
) -> None:
    env = TrainFailEnv(case=echo_case, sandbox="docker", runs_root=tmp_path)
    env.reset(seed=0)
    env.step({"tool": "write_file", "arguments": {"path": "notes.txt", "content": "kept"}})
    sandbox = env._require_episode().sandbox
    assert isinstance(sandbox, DockerSandbox)
    sandbox.engine.client.api.kill(sandbox._box.id)
    observation, _, terminated, _, info = env.step({"tool": "shell", "arguments": {"command": "cat notes.txt"}})
    assert observation.startswith("error: the sandbox stopped unexpectedly") and not terminated
    observation, *_ = env.step({"tool": "shell", "arguments": {"command": "cat notes.txt"}})
    assert observation == "exit code 0\n--- stdout ---\nkept"
    directory = env.run_dir
    env.close()
    assert directory is not None
    events = read_events(directory / "ledger.jsonl")
    assert [e["action"] for e in events if e["event"] == "sandbox"] == ["restored"]


@pytest.mark.docker
def test_echo_case_grades_the_same_under_both_backends(
    echo_case: CaseSpec, control_image: RuntimeImage, bwrap_usable: None, tmp_path: Path
) -> None:
    workspace = tmp_path / "revision"
    workspace.mkdir()
    for path in echo_case.workspace_dir.iterdir():
        (workspace / path.name).write_bytes(path.read_bytes())
    statuses = {}
    for backend in ("bwrap", "docker"):
        receipt = Grader(echo_case, sandbox=backend, cache=False).grade_dir(workspace)
        statuses[backend] = [(o.scenario, o.status) for o in receipt.outcomes]
    assert statuses["docker"] == statuses["bwrap"], json.dumps(statuses)


def test_cached_fixtures_are_mounted_read_only_in_grading_containers(
    echo_case: CaseSpec, control_image: RuntimeImage, runtime: Runtime, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TRAINFAIL_HOME", str(tmp_path / "home"))
    check_fixture_cache(tmp_path, echo_case, runtime, "docker")


def test_scenario_groups_grade_the_same_under_both_backends(
    control_image: RuntimeImage, runtime: Runtime, bwrap_usable: None, tmp_path: Path
) -> None:
    case = load_case(make_echo_group_case(tmp_path / "echo_group_case"))
    workspace = tmp_path / "revision"
    shutil.copytree(case.workspace_dir, workspace)
    seen = {}
    for backend in ("bwrap", "docker"):
        receipt = Grader(case, sandbox=backend, cache=False).grade_dir(workspace)
        seen[backend] = [(o.scenario, o.status, o.grouped, o.metrics["harnesslib"]) for o in receipt.outcomes]
    assert seen["docker"] == seen["bwrap"], json.dumps(seen)
    assert [grouped for _, _, grouped, _ in seen["docker"]] == [True, True, False, False]
    assert all(mounted for *_, mounted in seen["docker"]), "/harnesslib is mounted in grading containers"
