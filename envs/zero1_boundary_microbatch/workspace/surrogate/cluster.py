"""Joining and leaving the job's process group (torchrun starts one process per rank).

The collective backend is ``$TRAINFAIL_BACKEND`` when the job runner sets it, gloo otherwise;
under nccl each rank computes on the GPU its ``LOCAL_RANK`` names.
"""
from __future__ import annotations

import os
from typing import NoReturn

import deepspeed
import torch
import torch.distributed as dist


def backend() -> str:
    return os.environ.get("TRAINFAIL_BACKEND") or "gloo"


def join() -> None:
    """Connect to the other ranks through DeepSpeed's communication layer."""
    deepspeed.init_distributed(dist_backend=backend())


def device() -> torch.device:
    if backend() != "nccl":
        return torch.device("cpu")
    return torch.device("cuda", int(os.environ.get("LOCAL_RANK", "0")))


def leave() -> NoReturn:
    """Wait for every rank, close the group and end the process here.

    Everything is written before this is called. Ending with ``os._exit`` skips interpreter
    teardown, where torch 2.13's gloo sometimes aborts after the work is done.
    """
    if dist.is_initialized():
        dist.barrier()
        dist.destroy_process_group()
    os._exit(0)
