"""Process-group set-up for torchrun-launched ranks (gloo on CPU, nccl on GPUs)."""
from __future__ import annotations

import os

import deepspeed
import torch
import torch.distributed as dist


def backend() -> str:
    """``TRAINFAIL_BACKEND`` if set (the job runner sets it), else gloo."""
    return os.environ.get("TRAINFAIL_BACKEND", "gloo")


def init_distributed() -> None:
    """Join the process group torchrun described in the environment."""
    deepspeed.init_distributed(dist_backend=backend())


def device() -> torch.device:
    """This rank's device: its GPU under nccl, else the CPU."""
    if backend() == "nccl":
        return torch.device("cuda", int(os.environ.get("LOCAL_RANK", "0")))
    return torch.device("cpu")


def shutdown() -> None:
    """Leave the process group and exit at once.

    torch 2.13's gloo can abort at interpreter exit after all work is done; every output is
    written before this is called, so exiting here loses nothing.
    """
    if dist.is_initialized():
        dist.barrier()
        dist.destroy_process_group()
    os._exit(0)
