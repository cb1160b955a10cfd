"""Joining the job, and the expert-parallel groups DeepSpeed keeps for MoE layers.

``deepspeed.utils.groups`` lays the ranks out: with ``W`` ranks and expert-parallel size ``E``,
an expert-parallel group is ``E`` consecutive ranks (rank ``r`` is expert-parallel rank
``r % E`` and holds that slice of the experts), and the ``W / E`` ranks with the same slice form
an expert-data-parallel group.
"""
from __future__ import annotations

import os

import deepspeed
import torch
import torch.distributed as dist
from deepspeed.utils import groups


BACKEND = os.environ.get("TRAINFAIL_BACKEND", "gloo")  # gloo on CPU ranks, nccl on GPUs


def device() -> torch.device:
    """Where this rank computes: its GPU under nccl, else the CPU."""
    local = int(os.environ.get("LOCAL_RANK", "0"))
    return torch.device("cuda", local) if BACKEND == "nccl" else torch.device("cpu")


def join(expert_parallel_size: int, num_experts: int) -> None:
    """Join the job and build DeepSpeed's expert groups for ``expert_parallel_size``."""
    if BACKEND == "nccl":
        torch.cuda.set_device(device())
    deepspeed.init_distributed(dist_backend=BACKEND)
    world = dist.get_world_size()
    if world % expert_parallel_size or num_experts % expert_parallel_size:
        raise ValueError(f"parallel.expert_parallel_size={expert_parallel_size} must divide the "
                         f"{world} ranks and moe.num_experts={num_experts}")
    groups._create_expert_and_data_parallel(expert_parallel_size)


def expert_rank(expert_parallel_size: int) -> int:
    """Which slice of the experts this rank holds: its place in its expert-parallel group, i.e.
    ``rank % expert_parallel_size`` under DeepSpeed's consecutive layout."""
    return dist.get_rank() % expert_parallel_size


def leave() -> None:
    """Leave the job once every output is written (gloo may abort in its exit destructors)."""
    dist.barrier()
    dist.destroy_process_group()
    os._exit(0)
