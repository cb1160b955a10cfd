"""Process group set-up for data-parallel training (one process per rank)."""
from __future__ import annotations

import os

import torch
import torch.distributed as dist


def backend_name() -> str:
    """Collective backend: ``gloo`` on CPU hosts unless the environment asks for another."""
    return os.environ.get("TRAINFAIL_BACKEND", "gloo")


def init() -> None:
    """Join the process group torchrun describes in the environment."""
    if backend_name() == "nccl":
        torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", "0")))
    dist.init_process_group(backend=backend_name())


def device() -> torch.device:
    """This rank's GPU under NCCL, otherwise the CPU."""
    if backend_name() == "nccl":
        return torch.device("cuda", int(os.environ.get("LOCAL_RANK", "0")))
    return torch.device("cpu")


def shutdown() -> None:
    """Leave the process group.

    The process then exits without running interpreter teardown: torch 2.13's gloo can abort
    in static destructors after all work is done, which would turn a finished run into a
    failed job.
    """
    dist.barrier()
    dist.destroy_process_group()
    os._exit(0)
