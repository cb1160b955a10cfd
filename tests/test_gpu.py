"""GPU checks on a real NVIDIA GPU (``pytest -m gpu``; ``scripts/gpu-check.sh`` runs them).

Without a GPU every test here is skipped with the reason. What they check:

* device plumbing per backend: a one-GPU lease shows the job exactly that GPU (``nvidia-smi -L``
  inside the sandbox, no torch needed), and with a CUDA runtime torch sees it too;
* one CUDA episode per case on one device (the reference agent, graded), for cases whose
  largest scenario fits the node;
* qualification of a case where the host has enough GPUs (verdicts and measured quantities
  equal over repeats).

The torch checks need the ``cuda`` runtime variant (``TRAINFAIL_RUNTIME_VARIANT=cuda``, built
from ``requirements-control-cuda.lock``); with a CPU runtime they are skipped with that reason.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from gym_trainfail.devices import DevicePool
from gym_trainfail.hardware import query_gpus
from gym_trainfail.registry import default_registry
from gym_trainfail.runtimes import Runtime, find_runtime
from gym_trainfail.sandbox import backend_status, create_sandbox
from gym_trainfail.sandbox.base import SandboxConfig

pytestmark = pytest.mark.gpu

GPUS = query_gpus()
NO_GPU = "no NVIDIA GPU here (nvidia-smi missing or lists none); run scripts/gpu-check.sh on a GPU host"
requires_gpu = pytest.mark.skipif(not GPUS, reason=NO_GPU)
TORCH_CHECK = (
    "import os, torch; assert torch.cuda.is_available(), 'torch sees no GPU'; "
    "print(torch.cuda.device_count(), str(torch.cuda.get_device_properties(0).uuid), os.environ['TRAINFAIL_BACKEND'])"
)


def _backends() -> list[str]:
    status = backend_status()
    return [name for name in ("process", "bwrap", "docker") if status.get(name) is None]


@pytest.fixture(scope="module")
def gpu_runtime() -> Runtime:
    if not GPUS:
        pytest.skip(NO_GPU)
    return find_runtime("control")


@requires_gpu
@pytest.mark.parametrize("backend", ["process", "bwrap", "docker"])
def test_job_sees_exactly_its_gpu(backend: str, gpu_runtime: Runtime, tmp_path: Path) -> None:
    if backend not in _backends():
        pytest.skip(f"sandbox {backend!r} is not usable here: {backend_status()[backend]}")
    pool = DevicePool(backend=backend, root=tmp_path / "pool")
    if pool.kind != "gpu":
        pytest.skip(f"sandbox {backend!r} cannot expose GPUs here: {pool.cpu_reason}")
    leased = pool.indices[-1]  # the last GPU: a renumbering bug would show GPU 0 instead
    pool = DevicePool(backend=backend, root=tmp_path / "pool", gpu_ids=[leased])
    wanted = next(g for g in GPUS if g.index == leased)
    workspace = tmp_path / "ws"
    workspace.mkdir()
    with pool.lease(1) as lease, create_sandbox(backend, SandboxConfig(gpu_runtime, workspace)) as box:
        assert [d.index for d in lease.devices] == [leased]
        if shutil.which("nvidia-smi") and backend != "docker":
            shown = box.exec(["nvidia-smi", "-L"], timeout_s=60, devices=lease.devices)
            assert shown.ok, shown.stderr
            if backend == "bwrap":  # only the bound node exists
                assert shown.stdout.count("GPU ") == 1 and wanted.uuid in shown.stdout
        result = box.exec(["python", "-c", TORCH_CHECK], timeout_s=120, devices=lease.devices)
        if "torch sees no GPU" in result.stderr and gpu_runtime.variant != "cuda":
            pytest.skip(f"the runtime is the {gpu_runtime.variant!r} variant; build the 'cuda' one to check torch")
        assert result.ok, result.stderr[-2000:]
        count, uuid, backend_name = result.stdout.split()
        assert (count, backend_name) == ("1", "nccl")
        assert wanted.uuid.removeprefix("GPU-") in uuid


def _cases_that_fit(devices: int) -> list[str]:
    return [c.id for c in default_registry() if max((s.devices for s in c.scenarios), default=1) <= devices]


@requires_gpu
@pytest.mark.parametrize("case_id", [c.id for c in default_registry()])
def test_reference_episode_on_one_gpu(case_id: str, gpu_runtime: Runtime, tmp_path: Path) -> None:
    if gpu_runtime.variant != "cuda":
        pytest.skip("needs the 'cuda' runtime variant (TRAINFAIL_RUNTIME_VARIANT=cuda)")
    if case_id not in _cases_that_fit(len(GPUS)):
        pytest.skip(f"{case_id} needs more GPUs than this node's {len(GPUS)}")
    backend = next((b for b in ("bwrap", "docker") if b in _backends()), "process")
    trainfail = shutil.which("trainfail") or str(Path(sys.executable).with_name("trainfail"))
    argv = [trainfail, "run", "--case", case_id, "--agent", "reference"]
    argv += ["--sandbox", backend, "--out", str(tmp_path / "run"), "--json"]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=420, check=False, env=dict(os.environ))
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout)
    assert result["reward"] == 1.0, result
    ledger = (tmp_path / "run" / "ledger.jsonl").read_text()
    assert '"kind": "gpu"' in ledger or '"kind":"gpu"' in ledger


@requires_gpu
@pytest.mark.parametrize("case_id", [c.id for c in default_registry() if "native" in c.profiles])
def test_native_profile_on_one_gpu(case_id: str, gpu_runtime: Runtime, tmp_path: Path) -> None:
    """The reference repair at the ``native`` profile passes every scenario this node can run;
    the rest are "not runnable here" (an incomplete grade, never a failure)."""
    from gym_trainfail.files import apply_patch
    from gym_trainfail.grading import Grader, not_runnable

    if gpu_runtime.variant != "cuda":
        pytest.skip("needs the 'cuda' runtime variant (TRAINFAIL_RUNTIME_VARIANT=cuda)")
    case = default_registry().get(case_id).with_profile("native")
    backend = next((b for b in ("bwrap", "docker") if b in _backends()), "process")
    workspace = tmp_path / "workspace"
    shutil.copytree(case.workspace_dir, workspace, symlinks=True)
    apply_patch(workspace, case.reference_patch)
    grader = Grader(case, sandbox=backend, runtime=gpu_runtime, cache=False)
    assert grader.pool.kind == "gpu", grader.pool.cpu_reason
    receipt = grader.grade_dir(workspace)
    skipped = {o.scenario for o in not_runnable(receipt)}
    ran = [o for o in receipt.outcomes if o.scenario not in skipped]
    assert ran, f"no scenario of {case_id} fits {len(GPUS)} GPU(s)"
    assert all(o.status == "pass" for o in ran), [(o.scenario, o.status, o.reason) for o in ran]


@requires_gpu
def test_qualification_on_gpus(gpu_runtime: Runtime) -> None:
    from gym_trainfail.qualify import qualify

    if gpu_runtime.variant != "cuda":
        pytest.skip("needs the 'cuda' runtime variant (TRAINFAIL_RUNTIME_VARIANT=cuda)")
    fitting = _cases_that_fit(len(GPUS))
    if not fitting:
        pytest.skip(f"no case fits this node's {len(GPUS)} GPU(s)")
    case = default_registry().get(fitting[0])
    backend = next((b for b in ("bwrap", "docker") if b in _backends()), "process")
    result = qualify(case, sandbox=backend, repeats=2)
    assert not result.problems, result.problems
