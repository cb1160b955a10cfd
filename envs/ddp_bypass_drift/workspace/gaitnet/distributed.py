"""The job's process group: one process per data-parallel rank, started by torchrun.

``TRAINFAIL_BACKEND`` picks the collective backend (gloo when unset); with nccl every rank
computes on the GPU its ``LOCAL_RANK`` names, and every tensor a collective touches must be
there too.
"""
from __future__ import annotations

import os

import torch
import torch.distributed as dist

BACKEND = os.environ.get("TRAINFAIL_BACKEND", "gloo")
LOCAL_RANK = int(os.environ.get("LOCAL_RANK", "0"))


def device() -> torch.device:
    """Where this rank's model and batches live."""
    return torch.device("cuda", LOCAL_RANK) if BACKEND == "nccl" else torch.device("cpu")


def init() -> None:
    """Join the group torchrun describes in the environment."""
    if BACKEND == "nccl":
        torch.cuda.set_device(LOCAL_RANK)
    dist.init_process_group(backend=BACKEND)


def shutdown() -> None:
    """Wait for the other ranks, leave the group, and end the process without interpreter
    teardown (torch 2.13's gloo can abort there, after every output is written)."""
    dist.barrier()
    dist.destroy_process_group()
    os._exit(0)
