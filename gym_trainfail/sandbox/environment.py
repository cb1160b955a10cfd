"""The explicit environment of a sandboxed command. Nothing is inherited from the host.

The host's environment (API keys above all) never reaches a sandbox: every backend starts
from an empty environment and adds only what is built here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from gym_trainfail.hardware import Device
from gym_trainfail.sandbox.base import SandboxConfig
from gym_trainfail.sandbox.gpu import cuda_visible_devices, gpu_infos

#: Settings that make a GPU (nccl) run reproducible, given to every grader run phase on GPUs:
#: cuBLAS's fixed workspace (documented requirement for deterministic cuBLAS), harnesslib's
#: switch for ``torch.use_deterministic_algorithms(True)`` / cuDNN deterministic, no autotuning
#: (:mod:`gym_trainfail.harnesslib.determinism`), and NCCL's ring algorithm with the simple
#: protocol, which fix the reduction order (NCCL has no "deterministic" switch of its own).
DETERMINISTIC_GPU_ENV = {
    "CUBLAS_WORKSPACE_CONFIG": ":4096:8",
    "TORCH_DETERMINISTIC": "1",
    "NCCL_ALGO": "Ring",
    "NCCL_PROTO": "Simple",
}

#: Names a caller may never set inside a sandbox, whatever it passes.
_RESERVED = frozenset({"LD_PRELOAD", "LD_LIBRARY_PATH", "PYTHONHOME", "TRAINFAIL_AUDIT_FD"})


def sandbox_env(
    config: SandboxConfig,
    workspace: str,
    devices: Sequence[Device],
    extra: Mapping[str, str] | None = None,
    audit_fd: int | None = None,
    backend: str = "docker",
) -> dict[str, str]:
    """Environment for one command: runtime, offline switches, devices, then ``extra``.

    ``TRAINFAIL_BACKEND`` is ``nccl`` only when the command is given GPUs, and
    ``CUDA_VISIBLE_DEVICES`` names them as ``backend``'s sandboxes show them
    (:func:`gym_trainfail.sandbox.gpu.cuda_visible_devices`)."""
    env = {
        "HOME": "/tmp",
        "USER": "agent",
        "LANG": "C.UTF-8",
        "TMPDIR": "/tmp",
        "WORKSPACE": workspace,
        "PYTHONUNBUFFERED": "1",
        "OMP_NUM_THREADS": "1",
        "TOKENIZERS_PARALLELISM": "false",
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "HF_DATASETS_OFFLINE": "1",
        "HF_HUB_DISABLE_TELEMETRY": "1",
        "MPLCONFIGDIR": "/tmp",
        "TRAINFAIL_BACKEND": "gloo",
        **config.runtime.env(),
        **config.env,
    }
    if config.python_path:  # the runtime as this sandbox shows it: the image's path under Docker
        env["PYTHONPATH"] = ":".join(str(config.runtime.root / folder) for folder in config.python_path)
    gpus = [d for d in devices if d.kind == "gpu"]
    if devices:
        env["TRAINFAIL_DEVICES"] = str(len(devices))
        env["NPROC"] = str(len(devices))
    if gpus:
        env["TRAINFAIL_BACKEND"] = "nccl"
    env.update(cuda_visible_devices(backend, gpu_infos(devices)))
    for key, value in (extra or {}).items():
        if key not in _RESERVED:
            env[key] = value
    if audit_fd is not None:
        env["TRAINFAIL_AUDIT_FD"] = str(audit_fd)
    return env
