"""Deterministic GPU settings for a rank, switched on by the grader's environment.

On GPUs (``TRAINFAIL_BACKEND=nccl``) every grader run phase gets ``TORCH_DETERMINISTIC=1``,
``CUBLAS_WORKSPACE_CONFIG=:4096:8`` and ``NCCL_ALGO=Ring NCCL_PROTO=Simple`` (see
``gym_trainfail.sandbox.environment.DETERMINISTIC_GPU_ENV``). The cuBLAS and NCCL settings are
read from the environment by the libraries themselves; the torch switches need a call, made
here: :func:`apply_from_env` (the warm launcher calls it in every rank; a cold-launched harness
calls it before building its model). Standard library only; torch is imported lazily.
"""

from __future__ import annotations

import importlib
import os

SWITCH = "TORCH_DETERMINISTIC"


def wanted(env: dict[str, str] | None = None) -> bool:
    """Whether the environment asks for deterministic torch."""
    return (env if env is not None else os.environ).get(SWITCH, "") not in ("", "0")


def apply_from_env() -> bool:
    """If :data:`SWITCH` is set: ``torch.use_deterministic_algorithms(True)``, cuDNN
    deterministic, no cuDNN autotuning. Returns whether it applied them."""
    if not wanted():
        return False
    torch = importlib.import_module("torch")
    torch.use_deterministic_algorithms(True)
    torch.backends.cudnn.deterministic = True
    torch.backends.cudnn.benchmark = False
    return True
