"""Joining the job and building its tensor-parallel groups.

torchrun (or ``scripts/launch.sh``) starts one process per tensor-parallel rank; there is no
data or pipeline parallelism, so megatron-core's model-parallel group is the tensor-parallel
group. DeepSpeed reads the groups through a Megatron-LM style ``mpu`` object.
"""
from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from types import SimpleNamespace

import deepspeed
import torch
import torch.distributed as dist
from megatron.core import parallel_state as ps


@dataclass(frozen=True)
class Placement:
    """This process's place in the job."""

    rank: int
    tp_rank: int
    tp_size: int
    device: torch.device

    @property
    def writes_logs(self) -> bool:
        return self.rank == 0


def join(tensor_parallel_size: int) -> Placement:
    """Start torch.distributed through DeepSpeed (``$TRAINFAIL_BACKEND``: gloo unless set)
    and split the ranks into tensor-parallel groups."""
    backend = os.environ.get("TRAINFAIL_BACKEND") or "gloo"
    deepspeed.init_distributed(dist_backend=backend)
    started = dist.get_world_size()
    if started != tensor_parallel_size:
        raise SystemExit(f"{started} processes were started for tensor_model_parallel_size="
                         f"{tensor_parallel_size}; start one process per tensor-parallel rank")
    ps.initialize_model_parallel(tensor_model_parallel_size=tensor_parallel_size)
    device = torch.device("cpu")
    if backend == "nccl":
        device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", "0")))
        torch.cuda.set_device(device)
    return Placement(dist.get_rank(), ps.get_tensor_model_parallel_rank(),
                     ps.get_tensor_model_parallel_world_size(), device)


def mpu() -> SimpleNamespace:
    """The ``mpu`` interface DeepSpeed queries, answered by megatron-core's parallel_state."""
    getters = {f"get_{kind}_{what}": getattr(ps, f"get_{kind}_{what}")
               for kind in ("tensor_model_parallel", "data_parallel", "pipeline_model_parallel")
               for what in ("rank", "world_size", "group")}
    return SimpleNamespace(get_model_parallel_rank=ps.get_tensor_model_parallel_rank,
                           get_model_parallel_world_size=ps.get_tensor_model_parallel_world_size,
                           get_model_parallel_group=ps.get_model_parallel_group, **getters)


def leave() -> None:
    """Wait for every rank, drop the groups and exit.

    The process ends with ``os._exit``: torch 2.13's gloo can abort in C++ static destructors
    after a clean run, which would make a finished job look failed.
    """
    if dist.is_initialized():
        dist.barrier()
        ps.destroy_model_parallel()
        dist.destroy_process_group()
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    os._exit(0)
