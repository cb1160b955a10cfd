"""Disk budgets the filesystem enforces (``gym_trainfail.sandbox.disk``), and a full ``/tmp`` in Docker.

Writes past an episode's ``[budgets] disk_mb`` must fail with ENOSPC inside the sandbox, in the
workspace and in ``/tmp``, and the host's free space must drop by less than the budget. The run
directories live on a filesystem of their own (:func:`host_fs`), so its free space moves only
with what the test does, not with whatever else the machine writes meanwhile.

Enforcement needs root (CI runs as root): elsewhere these tests are skipped, and under CI they
fail. Docker tests are marked ``docker`` (see tests/test_docker.py for the engine and image).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gym_trainfail.cases import DEFAULT_DISK_MB, CaseSpec, load_case
from gym_trainfail.env import TrainFailEnv
from gym_trainfail.errors import SandboxUnavailableError
from gym_trainfail.ledger import read_events
from gym_trainfail.runtimes import Runtime
from gym_trainfail.sandbox import Limits, SandboxConfig, create_sandbox, disk
from gym_trainfail.sandbox.base import GiB
from gym_trainfail.sandbox.disk import (
    DiskArea,
    MiB,
    disk_support,
    is_mounted,
    reclaim_stale,
    scratch_bytes,
    split_budget,
)
from gym_trainfail.sandbox.docker import ContainerSpec, DockerSandbox, container_kwargs
from tests.conftest import ECHO_CASE
from tests.test_docker import control_image, docker_engine_session  # noqa: F401 - fixtures

ISOLATING = ["bwrap", pytest.param("docker", marks=pytest.mark.docker)]
BUDGET_MB = 1024


@pytest.fixture(scope="module")
def enforced() -> None:
    support = disk_support()
    if support.enforced:
        return
    if os.environ.get("CI"):
        pytest.fail(f"CI runs as root, where disk budgets must be enforced: {support.describe()}")
    pytest.skip(support.describe())


@pytest.fixture
def host_fs(tmp_path: Path, enforced: None) -> Iterator[Path]:
    """A 4 GiB filesystem of its own standing in for the host's disk."""
    with DiskArea(tmp_path / "host", 4 * GiB) as area:
        yield area.path


@pytest.fixture
def own_records(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> str:
    """Keep this test's area records out of the shared ``$TRAINFAIL_HOME/disk``: any process that
    makes an area reclaims every stale record there, so under ``pytest -n`` another worker would
    reclaim a deliberately crashed area before the test looks at it. Returns the lines a crash
    script runs first to record its areas in the same private folder."""
    folder = tmp_path_factory.mktemp("records")
    monkeypatch.setattr(disk, "records_dir", lambda: folder)
    return (
        "import gym_trainfail.sandbox.disk as disk; from pathlib import Path\n"
        f"disk.records_dir = lambda: Path({str(folder)!r})\n"
    )


def free_bytes(path: Path) -> int:
    os.sync()
    stats = os.statvfs(path)
    return stats.f_bavail * stats.f_frsize


def act(env: TrainFailEnv, tool: str, **arguments: Any) -> str:
    return str(env.step({"tool": tool, "arguments": arguments})[0])


# -- sizes (pure) --------------------------------------------------------------------------------


def test_budget_split_and_scratch_sizes() -> None:
    split = split_budget(1024 * MiB)
    assert (split.workspace_bytes, split.tmp_bytes) == (768 * MiB, 256 * MiB)
    assert split_budget(16 * GiB).tmp_bytes == GiB  # /tmp never takes more than 1 GiB
    assert scratch_bytes(Limits(memory_bytes=GiB, tmp_bytes=GiB)) == GiB // 4  # a quarter of memory at most
    assert scratch_bytes(Limits(memory_bytes=8 * GiB, tmp_bytes=100 * MiB)) == 100 * MiB
    assert scratch_bytes(Limits(memory_bytes=None, tmp_bytes=None)) is None


def test_disk_budget_is_a_case_budget_with_a_default(case_copy: Path, echo_case: CaseSpec) -> None:
    assert echo_case.budgets.disk_mb == DEFAULT_DISK_MB
    toml = case_copy / "case.toml"
    toml.write_text(toml.read_text().replace("[budgets]\n", "[budgets]\ndisk_mb = 2048\n"))
    assert load_case(case_copy).budgets.disk_mb == 2048
    env = TrainFailEnv(case=echo_case, sandbox="process", budgets={"disk_mb": 512})
    assert env.budgets.disk_mb == 512 and env.budgets.steps == echo_case.budgets.steps


def test_docker_tmp_is_smaller_than_memory() -> None:
    spec = ContainerSpec(
        image="x", name="n", uid=1000, workspace=Path("/w"), ctl_dir=Path("/c"), limits=Limits(memory_bytes=GiB)
    )
    kwargs = container_kwargs(spec)
    assert kwargs["tmpfs"]["/tmp"].endswith(f",size={GiB // 4}")
    assert kwargs["shm_size"] == GiB // 2 and "oom_score_adj" not in kwargs


# -- the area itself -------------------------------------------------------------------------------


def test_area_takes_its_seed_in_and_keeps_contents_out(tmp_path: Path, enforced: None) -> None:
    path = tmp_path / "ws"
    path.mkdir()
    (path / "seed.txt").write_text("seed")
    area = DiskArea(path, 64 * MiB, keep=True)
    assert area.enforced and is_mounted(area.path) and sorted(os.listdir(path)) == ["seed.txt"]
    (path / "link").symlink_to("/etc/passwd")
    os.mkfifo(path / "fifo")
    with open(path / "sparse", "wb") as handle:
        handle.truncate(GiB)  # larger than the budget, but holds no blocks
    with pytest.raises(OSError) as full:
        (path / "big").write_bytes(b"x" * (80 * MiB))
    assert full.value.errno == 28  # ENOSPC, on the host as in the sandbox
    (path / "big").unlink()
    area.close()
    assert not is_mounted(area.path) and not area.image.exists()
    assert sorted(os.listdir(path)) == ["fifo", "link", "seed.txt", "sparse"]
    assert os.readlink(path / "link") == "/etc/passwd" and (path / "seed.txt").read_text() == "seed"
    assert os.stat(path / "sparse").st_blocks == 0  # copied out as a hole
    assert sorted(os.listdir(tmp_path)) == ["ws"]  # no image, staging or seed folder left


def test_a_seed_larger_than_the_budget_is_refused_and_left_in_place(tmp_path: Path, enforced: None) -> None:
    path = tmp_path / "ws"
    path.mkdir()
    (path / "big").write_bytes(os.urandom(40 * MiB))
    with pytest.raises(SandboxUnavailableError, match="do not fit its disk budget of 16 MiB"):
        DiskArea(path, 16 * MiB)
    assert not is_mounted(path) and os.path.getsize(path / "big") == 40 * MiB
    assert sorted(os.listdir(tmp_path)) == ["ws"]


def test_an_area_without_enforcement_is_a_plain_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    disk_support.cache_clear()
    try:
        support = disk_support()
        with DiskArea(tmp_path / "ws", 64 * MiB) as area:
            assert not area.enforced and (tmp_path / "ws").is_dir() and not is_mounted(area.path)
    finally:
        disk_support.cache_clear()
    assert support.describe() == (
        "not enforced (episodes run without a disk budget): mounting a size-limited filesystem needs root, "
        "and this process is not root"
    )


def test_the_area_of_a_crashed_process_is_reclaimed(tmp_path: Path, enforced: None, own_records: str) -> None:
    path = tmp_path / "ws"
    crash = own_records + textwrap.dedent(
        f"""
        import os
        from pathlib import Path
        from gym_trainfail.sandbox.disk import DiskArea
        DiskArea(Path({str(path)!r}), 64 << 20, keep=True)
        Path({str(path)!r}, "written").write_text("before the crash")
        os.kill(os.getpid(), 9)
        """
    )
    done = subprocess.run([sys.executable, "-c", crash], capture_output=True, text=True, check=False)
    assert done.returncode == -signal.SIGKILL, done.stderr
    assert is_mounted(path)
    reclaim_stale()
    assert not is_mounted(path) and (path / "written").read_text() == "before the crash"
    assert [p.name for p in tmp_path.iterdir()] == ["ws"]
    assert not [r for r in disk.records_dir().glob("*.json") if str(path) in r.read_text()]


# -- episodes ----------------------------------------------------------------------------------------


@pytest.fixture(params=ISOLATING)
def budget_env(
    request: pytest.FixtureRequest, echo_case: CaseSpec, runtime: Runtime, bwrap_usable: None, host_fs: Path
) -> Iterator[TrainFailEnv]:
    """An episode env with a 1 GiB disk budget whose runs live on :func:`host_fs`."""
    if request.param == "docker":
        request.getfixturevalue("control_image")
    env = TrainFailEnv(
        case=echo_case,
        sandbox=request.param,
        runs_root=host_fs / "runs",
        grade_on_end=False,
        limits=Limits(memory_bytes=2 * GiB, pids=256),
        budgets={"disk_mb": BUDGET_MB},
    )
    yield env
    env.close()


def test_writes_past_the_budget_fail_inside_and_spare_the_host(budget_env: TrainFailEnv, host_fs: Path) -> None:
    budget_env.reset(seed=0)
    workspace = budget_env.run_dir / "workspace"  # type: ignore[operator]
    assert is_mounted(workspace)
    before = free_bytes(host_fs)
    observation = act(budget_env, "shell", command="fallocate -l 5G big")
    assert observation.startswith("exit code 1") and "No space left on device" in observation
    observation = act(budget_env, "shell", command="rm -f big; dd if=/dev/zero of=fill bs=1M count=5000 conv=fsync")
    assert "No space left on device" in observation
    for command in ("fallocate -l 5G /tmp/big", "dd if=/dev/zero of=/tmp/fill bs=1M count=5000"):
        observation = act(budget_env, "shell", command=command)
        assert observation.startswith("exit code 1") and "No space left on device" in observation, observation
    drop = before - free_bytes(host_fs)
    assert drop < BUDGET_MB * MiB, f"host free space dropped by {drop >> 20} MiB"
    assert act(budget_env, "shell", command="rm fill && echo room again").endswith("room again")
    budget_env.close()
    assert not is_mounted(workspace) and (workspace / "report.py").is_file()  # kept, readable on the host
    assert [p.name for p in workspace.parent.iterdir() if p.name.startswith(".workspace")] == []


def test_resume_and_recovery_work_on_a_budgeted_workspace(
    echo_case: CaseSpec, runtime: Runtime, bwrap_usable: None, host_fs: Path
) -> None:
    env = TrainFailEnv(case=echo_case, sandbox="bwrap", runs_root=host_fs / "runs", grade_on_end=False)
    env.reset(seed=0)
    run_dir = env.run_dir
    assert run_dir is not None
    workspace = run_dir / "workspace"
    act(env, "write_file", path="notes.txt", content="kept")
    subprocess.run(["umount", "--lazy", str(workspace)], check=True)  # the workspace vanishes,
    workspace.rmdir()  # filesystem and all
    observation = act(env, "shell", command="cat notes.txt")
    assert observation.startswith("error: the sandbox stopped unexpectedly"), observation
    assert is_mounted(workspace) and act(env, "shell", command="cat notes.txt").endswith("kept")
    assert [e["action"] for e in read_events(run_dir / "ledger.jsonl") if e["event"] == "sandbox"] == ["restored"]
    del env  # abandoned without close: its area is still mounted

    second = TrainFailEnv(case=echo_case, sandbox="bwrap", grade_on_end=False)
    _, info = second.reset(options={"resume": run_dir})
    assert info["resumed"] and is_mounted(workspace)
    assert act(second, "shell", command="cat notes.txt").endswith("kept")
    second.close()
    assert not is_mounted(workspace) and (workspace / "notes.txt").read_text() == "kept"


def test_a_crashed_episode_process_is_resumed(
    echo_case: CaseSpec, runtime: Runtime, bwrap_usable: None, host_fs: Path, own_records: str
) -> None:
    run_dir = host_fs / "crashed"
    crash = own_records + textwrap.dedent(
        f"""
        import os
        from pathlib import Path
        from gym_trainfail.cases import load_case
        from gym_trainfail.env import TrainFailEnv
        env = TrainFailEnv(case=load_case(Path({str(ECHO_CASE)!r})), sandbox="bwrap", grade_on_end=False)
        env.reset(options={{"run_dir": {str(run_dir)!r}}})
        env.step({{"tool": "write_file", "arguments": {{"path": "notes.txt", "content": "kept"}}}})
        os.kill(os.getpid(), 9)
        """
    )
    done = subprocess.run([sys.executable, "-c", crash], capture_output=True, text=True, check=False)
    assert done.returncode == -signal.SIGKILL, done.stderr
    assert is_mounted(run_dir / "workspace")
    env = TrainFailEnv(case=echo_case, sandbox="bwrap", grade_on_end=False)
    env.reset(options={"resume": run_dir})
    assert act(env, "shell", command="cat notes.txt").endswith("kept")
    env.close()
    assert not is_mounted(run_dir / "workspace")


# -- item 7: a full /tmp in Docker -------------------------------------------------------------------


@pytest.mark.docker
def test_docker_full_tmp_ends_the_command_not_the_container(
    control_image: Any,  # noqa: F811 - the fixture
    runtime: Runtime,
    tmp_path: Path,
) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    config = SandboxConfig(runtime=runtime, workspace=workspace, limits=Limits(memory_bytes=GiB, pids=256))
    box = create_sandbox("docker", config)
    assert isinstance(box, DockerSandbox)
    try:
        container = box._box.id
        result = box.exec(["bash", "-c", "cat /proc/self/oom_score_adj /proc/1/oom_score_adj"], timeout_s=30)
        assert result.stdout.split() == ["1000", "0"]  # commands go first when memory runs out
        result = box.exec(["bash", "-c", "dd if=/dev/zero of=/tmp/fill bs=1M count=4000"], timeout_s=60)
        assert result.exit_code == 1 and "No space left on device" in result.stderr and not result.oom_killed
        assert box.exec(["bash", "-c", "ls /tmp; echo alive"], timeout_s=30).stdout == "alive\n"  # emptied
        # /tmp and /dev/shm full (3/4 of the memory), then the command asks for the rest: it is the one killed.
        hog = "head -c 250M /dev/zero >/tmp/a; head -c 500M /dev/zero >/dev/shm/b; python3 -c 'bytearray(900 << 20)'"
        started = time.monotonic()
        result = box.exec(["bash", "-c", hog], timeout_s=120)
        assert result.oom_killed and result.exit_code == 137, (result, time.monotonic() - started)
        assert box.exec(["bash", "-c", "echo alive"], timeout_s=30).stdout == "alive\n"
        assert box._box.id == container
        box.check_alive()
    finally:
        box.close()
