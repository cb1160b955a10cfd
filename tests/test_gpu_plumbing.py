"""One device model for every backend, proven without a GPU: a fake ``nvidia-smi`` on ``PATH``,
fake ``/dev/nvidia*`` nodes (``mknod`` 195:N where allowed) and a fake ``ldconfig -p`` listing."""

from __future__ import annotations

import contextlib
import io
import json
import math
import os
import stat
import sys
import time
import types
from pathlib import Path
from typing import Any

import pytest

from gym_trainfail import cli
from gym_trainfail.arms import get_arm
from gym_trainfail.batch.ray_runner import ray_assigned_gpus
from gym_trainfail.cases import CaseSpec
from gym_trainfail.devices import DevicePool, Lease
from gym_trainfail.env import TrainFailEnv
from gym_trainfail.errors import SandboxUnavailableError, TrainFailError
from gym_trainfail.grading import Receipt, ScenarioOutcome
from gym_trainfail.grading.phases import HARNESS_ENV, Phases
from gym_trainfail.hardware import GPU_IDS_ENV, Device, query_gpus
from gym_trainfail.harnesslib import determinism
from gym_trainfail.qualify import VariantResult, metric_drift, numeric_metrics
from gym_trainfail.runtimes import Pin, Runtime, _check_variant, cuda_pip_env, lock_plan
from gym_trainfail.sandbox import gpu as gpu_mod
from gym_trainfail.sandbox.base import SandboxConfig
from gym_trainfail.sandbox.bwrap import BwrapSandbox
from gym_trainfail.sandbox.environment import DETERMINISTIC_GPU_ENV, sandbox_env

UUIDS = [f"GPU-0000000{i}-1111-2222-3333-44444444444{i}" for i in range(4)]
LIBCUDA = "/usr/lib/x86_64-linux-gnu/libcuda.so.1"

FAKE_SMI = """#!/bin/sh
# Fake nvidia-smi: answers the --query-gpu query detect_gpus/query_gpus make.
case "$*" in
  *--query-gpu=*) ;;
  *) echo "fake nvidia-smi: unsupported arguments: $*" >&2; exit 2 ;;
esac
{lines}
"""


def write_fake_smi(folder: Path, count: int) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    lines = "\n".join(
        f"echo '{i}, {UUIDS[i]}, NVIDIA H200, 570.86.15, 00000000:{0x10 + i:02X}:00.0'" for i in range(count)
    )
    script = folder / "nvidia-smi"
    script.write_text(FAKE_SMI.format(lines=lines))
    script.chmod(0o755)
    return script


def make_node(path: Path, minor: int | None) -> None:
    """A char device 195:minor (the NVIDIA major) when this user may mknod, else a plain file."""
    try:
        if minor is None:
            raise PermissionError
        os.mknod(path, 0o666 | stat.S_IFCHR, os.makedev(195, minor))
    except PermissionError:
        path.write_text("")


@pytest.fixture
def fake_gpus(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Four fake GPUs: nvidia-smi on PATH, device nodes under a fake /dev, a linker cache listing."""
    bin_dir = tmp_path / "bin"
    write_fake_smi(bin_dir, 4)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    monkeypatch.delenv(GPU_IDS_ENV, raising=False)
    dev = tmp_path / "dev"
    dev.mkdir()
    for i in range(4):
        make_node(dev / f"nvidia{i}", i)
    make_node(dev / "nvidiactl", 255)
    make_node(dev / "nvidia-uvm", None)
    outside = tmp_path / "driver-lib" / "libnvidia-ml.so.1"
    outside.parent.mkdir()
    outside.write_text("")
    listing = (
        "3 libs found in cache `/etc/ld.so.cache'\n"
        f"\tlibcuda.so.1 (libc6,x86-64) => {LIBCUDA}\n"
        f"\tlibnvidia-ml.so.1 (libc6,x86-64) => {outside}\n"
        "\tlibc.so.6 (libc6,x86-64) => /lib/x86_64-linux-gnu/libc.so.6\n"
    )
    monkeypatch.setattr(gpu_mod, "DEV_DIR", dev)
    monkeypatch.setattr(gpu_mod, "ldconfig_listing", lambda: listing)
    gpu_mod._gpu_table.cache_clear()
    yield dev
    gpu_mod._gpu_table.cache_clear()


def gpus(*indices: int) -> tuple[Device, ...]:
    return tuple(Device("gpu", i) for i in indices)


# -- detection and the pool's kind ------------------------------------------------------------


def test_fake_nvidia_smi_is_parsed(fake_gpus: Path) -> None:
    found = query_gpus()
    assert [g.index for g in found] == [0, 1, 2, 3]
    assert (found[2].uuid, found[2].name, found[2].driver, found[2].bus_id) == (
        UUIDS[2],
        "NVIDIA H200",
        "570.86.15",
        "00000000:12:00.0",
    )
    assert found[2].minor == 2  # no /proc/driver/nvidia here: the index


def test_pool_kind_follows_what_the_backend_can_expose(fake_gpus: Path, tmp_path: Path) -> None:
    assert DevicePool(root=tmp_path / "p", backend="process").kind == "gpu"
    assert DevicePool(root=tmp_path / "p", backend="docker").kind == "gpu"
    assert DevicePool(root=tmp_path / "p", backend="bwrap").kind == "gpu"  # nodes and libcuda present
    (fake_gpus / "nvidiactl").unlink()
    pool = DevicePool(root=tmp_path / "p", backend="bwrap", count=None)
    assert pool.kind == "cpu" and "nvidiactl" in pool.cpu_reason and "bwrap cannot expose GPUs" in pool.cpu_reason


def test_no_nvidia_smi_means_cpu_slots(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # no nvidia-smi
    pool = DevicePool(root=tmp_path / "p", backend="process")
    assert pool.kind == "cpu" and "no GPU" in pool.cpu_reason


def test_bwrap_support_needs_libcuda(fake_gpus: Path) -> None:
    assert gpu_mod.bwrap_gpu_support() is None
    assert gpu_mod.bwrap_gpu_support(listing="") == "bwrap cannot expose GPUs: " + gpu_mod.NO_LIBCUDA


# -- Ray: the pool leases exactly the ids Ray assigned --------------------------------------------


def test_ray_assigned_ids_are_the_pools_gpus(fake_gpus: Path, tmp_path: Path) -> None:
    with ray_assigned_gpus([2, 3]):
        pool = DevicePool(root=tmp_path / "p", backend="process")
        assert (pool.kind, pool.indices) == ("gpu", [2, 3])
        with pool.lease(2) as lease:
            assert [d.index for d in lease.devices] == [2, 3]
    assert GPU_IDS_ENV not in os.environ  # restored: the Ray worker process is reused
    with ray_assigned_gpus([]):  # Ray reserved no GPU for this task: none may be used
        assert DevicePool(root=tmp_path / "p", backend="process").kind == "cpu"
    assert DevicePool(root=tmp_path / "p", backend="process", gpu_ids=[1]).indices == [1]


def test_bad_gpu_ids_are_refused(fake_gpus: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv(GPU_IDS_ENV, "a,b")
    with pytest.raises(TrainFailError, match="comma-separated GPU indices"):
        DevicePool(root=tmp_path / "p", backend="process")


# -- what the job sees ------------------------------------------------------------------------------


def test_job_environment_per_backend(fake_gpus: Path, runtime: Runtime, tmp_path: Path) -> None:
    config = SandboxConfig(runtime=runtime, workspace=tmp_path)

    def seen(backend: str, devices: tuple[Device, ...]) -> tuple[str, str, str | None]:
        env = sandbox_env(config, "/workspace", devices, backend=backend)
        return env["CUDA_VISIBLE_DEVICES"], env["TRAINFAIL_BACKEND"], env.get("CUDA_DEVICE_ORDER")

    # process: the host itself, so the leased host indices (in nvidia-smi's PCI order), never 0..n-1
    assert seen("process", gpus(2, 3)) == ("2,3", "nccl", "PCI_BUS_ID")
    # docker: only the requested GPUs exist in the job's container, numbered from 0
    assert seen("docker", gpus(2, 3)) == ("0,1", "nccl", None)
    # bwrap: the leased GPUs by UUID (unambiguous however CUDA numbers the bound nodes)
    assert seen("bwrap", gpus(2, 3)) == (f"{UUIDS[2]},{UUIDS[3]}", "nccl", None)
    for backend in ("process", "docker", "bwrap"):
        assert seen(backend, (Device("cpu", 0), Device("cpu", 1))) == ("", "gloo", None)


def test_bwrap_binds_exactly_the_leased_nodes(fake_gpus: Path, tmp_path: Path) -> None:
    args = gpu_mod.bwrap_gpu_args(gpu_mod.gpu_infos(gpus(2, 3)))
    binds = [(args[i + 1], args[i + 2]) for i, a in enumerate(args) if a == "--dev-bind"]
    assert binds == [
        (str(fake_gpus / "nvidia2"), "/dev/nvidia2"),
        (str(fake_gpus / "nvidia3"), "/dev/nvidia3"),
        (str(fake_gpus / "nvidiactl"), "/dev/nvidiactl"),
        (str(fake_gpus / "nvidia-uvm"), "/dev/nvidia-uvm"),
    ]
    libraries = [args[i + 1] for i, a in enumerate(args) if a == "--ro-bind"]
    assert libraries == [str(tmp_path / "driver-lib" / "libnvidia-ml.so.1")]  # /usr is bound already
    (fake_gpus / "nvidia3").unlink()
    with pytest.raises(FileNotFoundError, match="GPU 3"):
        gpu_mod.bwrap_gpu_args(gpu_mod.gpu_infos(gpus(3)))


def test_bwrap_job_sees_only_its_gpus(fake_gpus: Path, runtime: Runtime, bwrap_usable: None, tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    box = BwrapSandbox(SandboxConfig(runtime=runtime, workspace=workspace))
    script = "ls /dev | grep nvidia | sort | tr '\\n' ' '; echo; echo $CUDA_VISIBLE_DEVICES $TRAINFAIL_BACKEND"
    result = box.exec(["sh", "-c", script], timeout_s=30, devices=gpus(1, 3))
    assert result.ok, result.stderr
    nodes, env = result.stdout.splitlines()
    assert nodes.split() == ["nvidia-uvm", "nvidia1", "nvidia3", "nvidiactl"]
    assert env == f"{UUIDS[1]},{UUIDS[3]} nccl"
    if stat.S_ISCHR((fake_gpus / "nvidia3").stat().st_mode):  # mknod was allowed: the node itself
        shown = box.exec(["stat", "-c", "%t:%T", "/dev/nvidia3"], timeout_s=30, devices=gpus(3))
        assert shown.stdout.strip() == "c3:3"  # major 195, minor 3
    cpu = box.exec(["sh", "-c", "ls /dev | grep -c nvidia; echo $TRAINFAIL_BACKEND"], timeout_s=30)
    assert cpu.stdout.split() == ["0", "gloo"]


def test_bwrap_refuses_gpu_jobs_without_a_driver(
    fake_gpus: Path, runtime: Runtime, bwrap_usable: None, tmp_path: Path
) -> None:
    (fake_gpus / "nvidiactl").unlink()
    box = BwrapSandbox(SandboxConfig(runtime=runtime, workspace=tmp_path))
    with pytest.raises(SandboxUnavailableError, match="bwrap cannot expose GPUs: no NVIDIA driver control node"):
        box.exec(["true"], timeout_s=30, devices=gpus(0))


# -- run_job larger than the node -------------------------------------------------------------------


def test_run_job_larger_than_the_node_is_an_error_at_once(
    echo_case: CaseSpec, runtime: Runtime, tmp_path: Path
) -> None:
    env = TrainFailEnv(
        case=echo_case,
        sandbox="process",
        runs_root=tmp_path / "runs",
        device_pool=DevicePool("cpu", 2, root=tmp_path / "pool"),
        grade_on_end=False,
    )
    try:
        env.reset(seed=0)
        started = time.monotonic()
        observation, _, terminated, truncated, _ = env.step(
            {"tool": "run_job", "arguments": {"command": "echo ran", "devices": 3}}
        )
        assert time.monotonic() - started < 5
        assert not (terminated or truncated)
        assert "requested 3 devices but this node has 2 CPU slots" in observation
        assert "ran" not in observation.replace("requested", "")
    finally:
        env.close()


# -- deterministic GPU grading ---------------------------------------------------------------------


def test_grader_run_phases_on_gpus_are_deterministic(
    runtime: Runtime, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[Any] = []

    class Recorder:
        def exec(self, argv: list[str], **kwargs: Any) -> Any:
            seen.append(kwargs.get("env"))
            return types.SimpleNamespace(ok=True)

        def close(self) -> None:
            pass

    monkeypatch.setattr("gym_trainfail.grading.phases.create_sandbox", lambda name, config: Recorder())
    phases = Phases.__new__(Phases)
    phases.runtime, phases.sandbox = runtime, "process"
    now = time.time()
    for devices in (gpus(0, 1), (Device("cpu", 0),)):
        phases.phase("grade-run", tmp_path, (), ["true"], 5, Lease(devices=devices, queued_at=now, started_at=now))
    assert seen == [{**HARNESS_ENV, **DETERMINISTIC_GPU_ENV}, HARNESS_ENV]
    assert DETERMINISTIC_GPU_ENV["CUBLAS_WORKSPACE_CONFIG"] == ":4096:8"
    assert (DETERMINISTIC_GPU_ENV["NCCL_ALGO"], DETERMINISTIC_GPU_ENV["NCCL_PROTO"]) == ("Ring", "Simple")


def test_harnesslib_applies_torch_determinism(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[bool] = []
    cudnn = types.SimpleNamespace(deterministic=False, benchmark=True)
    fake = types.SimpleNamespace(use_deterministic_algorithms=calls.append, backends=types.SimpleNamespace(cudnn=cudnn))
    monkeypatch.setitem(sys.modules, "torch", fake)
    monkeypatch.delenv("TORCH_DETERMINISTIC", raising=False)
    assert determinism.apply_from_env() is False and calls == []
    monkeypatch.setenv("TORCH_DETERMINISTIC", "1")
    assert determinism.apply_from_env() is True
    assert calls == [True] and cudnn.deterministic is True and cudnn.benchmark is False


def _receipt(label: str, metrics: dict[str, Any], status: str = "pass") -> VariantResult:
    outcome = ScenarioOutcome(scenario="healthy", kind="healthy", status=status, reason="", metrics=metrics)  # type: ignore[arg-type]
    receipt = Receipt(case_id="c", tree="t", grader_hash="g", outcomes=(outcome,), created=0.0, duration_s=0.0)
    return VariantResult(label, "unmodified", receipt)


def test_gpu_qualification_compares_measured_quantities() -> None:
    base = {"rel_l2": 1.0e-3, "losses": [2.5, 2.25], "ok": True, "note": "x"}
    assert numeric_metrics(base) == {"rel_l2": 1.0e-3, "losses[0]": 2.5, "losses[1]": 2.25}
    same = _receipt("unmodified#2", {**base, "losses": [2.5, 2.25 * (1 + 1e-9)]})
    assert metric_drift([_receipt("unmodified#1", base), same]) == []
    moved = _receipt("unmodified#2", {**base, "rel_l2": 1.1e-3})
    (problem,) = metric_drift([_receipt("unmodified#1", base), moved])
    assert "rel_l2" in problem and "not reproducible" in problem and "1e-06" in problem
    missing = _receipt("unmodified#2", {"rel_l2": 1.0e-3})
    assert "differ" in metric_drift([_receipt("unmodified#1", base), missing])[0]
    nan = {"x": math.nan}
    assert metric_drift([_receipt("a", nan), _receipt("b", nan)]) == []


# -- CUDA runtime variant ---------------------------------------------------------------------------


def _pins(*items: tuple[str, str]) -> list[Pin]:
    return [Pin(name, version, ("0" * 64,)) for name, version in items]


def test_cuda_variant_needs_a_cuda_torch() -> None:
    arm = get_arm("control")
    cpu = _pins(("torch", "2.13.0+cpu"), ("numpy", "2.4.6"))
    cuda = _pins(("torch", "2.13.0"), ("nvidia-cublas", "13.1.1.3"), ("nvidia-nccl-cu13", "2.29.7"), ("triton", "3.7"))
    _check_variant(cuda, "cuda", arm)
    with pytest.raises(TrainFailError, match=r"torch 2\.13\.0\+cpu without CUDA libraries .*find-links"):
        _check_variant(cpu, "cuda", arm)
    with pytest.raises(TrainFailError, match="not the CPU build"):
        _check_variant(cuda, "cpu", arm)
    plan = lock_plan(arm, "cuda", "3.11", cuda)
    assert (plan.torch, plan.problem) == ("2.13.0", "")
    assert plan.accelerator_packages == ("nvidia-cublas", "nvidia-nccl-cu13", "triton")
    assert plan.lock.endswith("requirements-control-cuda.lock")
    assert "without CUDA libraries" in lock_plan(arm, "cuda", "3.11", cpu).problem


def test_cuda_lock_ignores_local_cpu_wheel_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TRAINFAIL_CUDA_INDEX_URL", raising=False)
    env = cuda_pip_env()
    assert env["PIP_CONFIG_FILE"] == os.devnull and env["PIP_INDEX_URL"] == "https://pypi.org/simple"
    assert env["PIP_FIND_LINKS"] == env["PIP_CONSTRAINT"] == env["PIP_EXTRA_INDEX_URL"] == ""


def test_accelerator_option_selects_the_variant(monkeypatch: pytest.MonkeyPatch) -> None:
    from gym_trainfail.sandbox import docker_image

    monkeypatch.setenv("TRAINFAIL_RUNTIME_VARIANT", "cpu")  # restored (to absent) after the test
    args = cli._parser().parse_args(["runtimes", "lock", "--arm", "control", "--accelerator", "cuda", "--dry-run"])
    assert (args.accelerator, args.dry_run) == ("cuda", True)
    monkeypatch.setattr(cli.host, "lock_plans", lambda a, arms: 0)
    assert cli.main(["runtimes", "lock", "--arm", "control", "--accelerator", "cuda", "--dry-run"]) == 0
    assert os.environ["TRAINFAIL_RUNTIME_VARIANT"] == "cuda"
    # Every command that builds or runs something takes it (main sets it before the command).
    for command in (["run", "--case", "x"], ["batch", "--out", "x"], ["qualify", "x"], ["grade", "x"]):
        assert cli._parser().parse_args([*command, "--accelerator", "cuda"]).accelerator == "cuda"
    arm = get_arm("control")
    assert docker_image.image_tag(arm, "ab" * 32, "cuda") == f"gym-trainfail/runtime:control-cuda-{'ab' * 8}"
    assert docker_image.image_tag(arm, "ab" * 32) == f"gym-trainfail/runtime:control-{'ab' * 8}"


# -- doctor -----------------------------------------------------------------------------------------


def test_doctor_shows_gpus_variant_and_runnable_cases(fake_gpus: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TRAINFAIL_RUNTIME_VARIANT", "cpu")  # restored (to absent) after the test
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        assert cli.main(["doctor", "--json"]) == 0
    report = json.loads(buffer.getvalue())
    assert report["gpus"]["count"] == "4" and report["gpus"]["driver"] == "570.86.15"
    assert report["gpus"]["gpu 3"] == f"NVIDIA H200 {UUIDS[3]}"
    assert report["runtime_variant"].startswith("cpu")
    assert report["devices"].startswith("4 GPUs")
    assert report["cases_runnable_in_full"]
    assert all(v.startswith(("yes", "no: needs")) for v in report["cases_runnable_in_full"].values())
    # GPUs are here but the runtime is the cpu variant: a cuda profile says what to pass.
    assert "--accelerator cuda" in report["profiles"]["TrainFail/TPClipGradNorm-v1 native"]
    monkeypatch.setenv("TRAINFAIL_RUNTIME_VARIANT", "cuda")
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        assert cli.main(["doctor", "--json"]) == 0
    assert json.loads(buffer.getvalue())["profiles"]["TrainFail/TPClipGradNorm-v1 native"] == "yes (cuda)"
