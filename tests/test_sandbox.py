"""Sandbox backends against the real bubblewrap and the real runtime."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from gym_trainfail.errors import SandboxLostError, SandboxUnavailableError
from gym_trainfail.runtimes import Runtime
from gym_trainfail.sandbox import (
    Limits,
    Mount,
    Sandbox,
    SandboxConfig,
    create_sandbox,
    resolve_backend,
)
from gym_trainfail.sandbox.base import GiB
from gym_trainfail.sandbox.cgroups import cgroup_support
from tests.test_docker import control_image, docker_engine_session  # noqa: F401 - fixtures

BACKENDS = ["bwrap", "process"]


def _sandbox(backend: str, runtime: Runtime, workspace: Path, **config: object) -> Sandbox:
    workspace.mkdir(parents=True, exist_ok=True)
    return create_sandbox(backend, SandboxConfig(runtime=runtime, workspace=workspace, **config))  # type: ignore[arg-type]


@pytest.fixture(params=BACKENDS)
def sandbox(request: pytest.FixtureRequest, runtime: Runtime, bwrap_usable: None, tmp_path: Path) -> Sandbox:
    return _sandbox(request.param, runtime, tmp_path / "ws", limits=Limits(memory_bytes=GiB, pids=256))


@pytest.fixture
def bwrap(runtime: Runtime, bwrap_usable: None, tmp_path: Path) -> Sandbox:
    return _sandbox(
        "bwrap",
        runtime,
        tmp_path / "ws",
        limits=Limits(memory_bytes=GiB, pids=256, output_bytes=4000),
    )


def test_auto_picks_an_isolating_backend(bwrap_usable: None) -> None:
    assert resolve_backend("auto") in ("docker", "bwrap")
    with pytest.raises(SandboxUnavailableError, match="unknown sandbox 'chroot'"):
        resolve_backend("chroot")


def test_runs_in_workspace_with_runtime_and_explicit_env(sandbox: Sandbox) -> None:
    result = sandbox.exec(
        ["python", "-c", "import os, torch, sys; print(os.getcwd()); print(sys.prefix)"],
        timeout_s=120,
    )
    assert result.ok, result.stderr
    cwd, prefix = result.stdout.split()
    assert cwd == sandbox.workspace_path
    assert prefix == str(sandbox.config.runtime.venv)
    env = sandbox.exec(["env"], timeout_s=30).stdout
    assert "OPENAI_API_KEY" not in env and "sk-test-host-secret" not in env
    assert "HF_HUB_OFFLINE=1" in env


@pytest.fixture(params=["bwrap", "process", pytest.param("docker", marks=pytest.mark.docker)])
def every_backend(
    request: pytest.FixtureRequest, runtime: Runtime, bwrap_usable: None, tmp_path: Path
) -> Iterator[Sandbox]:
    """Each backend in turn (docker only where an engine and its image are usable)."""
    if request.param == "docker":
        request.getfixturevalue("control_image")
    sandbox = _sandbox(request.param, runtime, tmp_path / "ws", limits=Limits(memory_bytes=GiB, pids=256))
    yield sandbox
    sandbox.close()


def test_timeout_and_leftovers_kill_the_whole_tree(every_backend: Sandbox) -> None:
    started = time.monotonic()
    result = every_backend.exec(["bash", "-c", "sleep 300 & sleep 300 & wait"], timeout_s=1)
    assert result.timed_out and result.exit_code is None and time.monotonic() - started < 15
    marker = f"trainfail-orphan-{os.getpid()}-{every_backend.backend}"
    started = time.monotonic()
    left = every_backend.exec(["bash", "-c", f"(exec -a {marker} sleep 300) & echo started"], timeout_s=60)
    assert left.stdout == "started\n" and time.monotonic() - started < 10
    time.sleep(0.3)
    leftovers = [p for p in Path("/proc").glob("[0-9]*") if marker.encode() in _cmdline(p)]
    assert leftovers == [], "a background process outlived its command"


def _cmdline(proc: Path) -> bytes:
    try:
        return (proc / "cmdline").read_bytes()
    except OSError:
        return b""


def test_output_is_capped_with_a_notice(bwrap: Sandbox) -> None:
    result = bwrap.exec(["python", "-c", "print('x' * 100000)"], timeout_s=60)
    assert result.output_truncated
    assert len(result.stdout) < 4500
    assert "bytes of output omitted (limit 4000 bytes per stream)" in result.stdout


def test_no_network_and_non_root(bwrap: Sandbox) -> None:
    result = bwrap.exec(
        ["python", "-c", "import socket, os; print(os.getuid());"
         "s = socket.socket(); s.settimeout(3); s.connect(('1.1.1.1', 80))"],
        timeout_s=60,
    )  # fmt: skip
    assert result.stdout.strip() == "1000"
    assert result.exit_code != 0 and "Network is unreachable" in result.stderr


def test_host_paths_are_out_of_reach(bwrap: Sandbox, tmp_path: Path) -> None:
    secret = Path.home() / ".trainfail-test-secret"
    secret.write_text("secret")
    try:
        result = bwrap.exec(
            ["bash", "-c", f"cat {secret}; ls /root /opt /work 2>&1; cat /etc/shadow 2>&1"],
            timeout_s=30,
        )
        assert "secret" not in result.stdout.replace(".trainfail-test-secret", "")
        assert "No such file or directory" in result.stdout
    finally:
        secret.unlink()


def test_runtime_and_system_are_read_only(bwrap: Sandbox) -> None:
    runtime = bwrap.config.runtime
    result = bwrap.exec(
        [
            "bash",
            "-c",
            f"touch {runtime.site_packages}/evil.py; touch /usr/evil; mount -o remount,rw /usr; echo ok > /workspace/f",
        ],
        timeout_s=30,
    )
    assert result.stderr.count("Read-only file system") >= 2
    assert not (runtime.site_packages / "evil.py").exists()
    assert (bwrap.host_workspace / "f").read_text() == "ok\n"


def test_base_interpreter_packages_are_hidden(bwrap: Sandbox) -> None:
    hidden = bwrap.config.runtime.hidden_paths()
    if not hidden:
        pytest.skip("runtime built from a /usr interpreter: nothing to hide")
    result = bwrap.exec(["ls", "-A", str(hidden[0])], timeout_s=30)
    assert result.ok and result.stdout.strip() == ""


@pytest.mark.skipif(cgroup_support().version == 0, reason="needs writable cgroups (CI runs as root)")
def test_memory_hog_is_killed(bwrap: Sandbox) -> None:
    result = bwrap.exec(["python", "-c", "x = bytearray(3 << 30); print('allocated')"], timeout_s=60)
    assert result.oom_killed and result.exit_code != 0
    assert "allocated" not in result.stdout


@pytest.mark.skipif(cgroup_support().version == 0, reason="needs writable cgroups (CI runs as root)")
def test_fork_bomb_is_contained(bwrap: Sandbox) -> None:
    started = time.monotonic()
    result = bwrap.exec(["bash", "-c", "bomb() { bomb | bomb & }; bomb; sleep 2; echo survived"], timeout_s=20)
    assert time.monotonic() - started < 30
    after = bwrap.exec(["echo", "alive"], timeout_s=30)
    assert after.ok and after.stdout == "alive\n"
    assert result.exit_code is not None or result.timed_out


def test_mounts_read_only_and_writable(runtime: Runtime, bwrap_usable: None, tmp_path: Path) -> None:
    private = tmp_path / "private"
    private.mkdir()
    (private / "data.txt").write_text("grader data")
    io = tmp_path / "io"
    io.mkdir()
    box = _sandbox(
        "bwrap",
        runtime,
        tmp_path / "ws",
        mounts=(Mount(private, "/grader"), Mount(io, "/io", writable=True)),
    )
    result = box.exec(["bash", "-c", "cat /grader/data.txt; echo x > /grader/y; echo out > /io/o"], timeout_s=30)
    assert "grader data" in result.stdout and "Read-only file system" in result.stderr
    assert (io / "o").read_text() == "out\n" and not (private / "y").exists()


def test_lost_workspace_is_reported(sandbox: Sandbox) -> None:
    sandbox.exec(["true"], timeout_s=30)
    for path in sorted(sandbox.host_workspace.rglob("*"), reverse=True):
        path.unlink() if not path.is_dir() else path.rmdir()
    sandbox.host_workspace.rmdir()
    with pytest.raises(SandboxLostError, match="no longer exists"):
        sandbox.exec(["true"], timeout_s=30)
