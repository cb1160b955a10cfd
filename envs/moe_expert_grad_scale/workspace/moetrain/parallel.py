"""Process groups: data parallelism over every rank, expert parallelism inside it.

DeepSpeed's ``deepspeed.utils.groups`` builds the groups. With ``W`` ranks and expert-parallel
size ``E``, the expert-parallel groups are ``E`` consecutive ranks (each holds a different
slice of the experts: expert-parallel rank ``rank % E``) and the expert-data-parallel groups
are the ``W / E`` ranks that hold the same slice (ranks with the same ``rank % E``).
"""
from __future__ import annotations

import os

import deepspeed
import torch
import torch.distributed as dist
from deepspeed.utils import groups


def backend() -> str:
    """The collective backend: ``$TRAINFAIL_BACKEND`` (``gloo`` on CPU, ``nccl`` on GPUs)."""
    return os.environ.get("TRAINFAIL_BACKEND", "gloo")


def device() -> torch.device:
    """This rank's device."""
    if backend() == "nccl":
        return torch.device("cuda", int(os.environ.get("LOCAL_RANK", "0")))
    return torch.device("cpu")


def init_distributed(expert_parallel_size: int) -> None:
    """Join the job and build the expert-parallel and expert-data-parallel groups."""
    if backend() == "nccl":
        torch.cuda.set_device(device())
    deepspeed.init_distributed(dist_backend=backend())
    world = dist.get_world_size()
    if world % expert_parallel_size:
        raise ValueError(f"expert_parallel_size={expert_parallel_size} does not divide world_size={world}")
    groups._create_expert_and_data_parallel(expert_parallel_size)


def group_name(expert_parallel_size: int) -> str:
    """The name DeepSpeed's MoE layer gives its expert groups."""
    return f"ep_size_{expert_parallel_size}"


def expert_parallel_rank(expert_parallel_size: int) -> int:
    """This rank's position in its expert-parallel group (which slice of experts it holds)."""
    return dist.get_rank(group=groups._get_expert_parallel_group(group_name(expert_parallel_size)))


def shutdown() -> None:
    """Leave the job. Results are written before this; gloo can abort in its destructors."""
    dist.barrier()
    dist.destroy_process_group()
    os._exit(0)
