"""The job's layout: every process is one tensor-parallel rank (megatron-core ``parallel_state``).

There is no data or pipeline parallelism, so the tensor-parallel group is the whole job and a
run needs exactly ``parallel.tensor_model_parallel_size`` processes.
"""
from __future__ import annotations

import os
import sys

import torch
import torch.distributed as dist
from megatron.core import parallel_state


def backend_name() -> str:
    """``$TRAINFAIL_BACKEND``: ``gloo`` (CPU hosts, the default) or ``nccl`` (one GPU per rank)."""
    return os.environ.get("TRAINFAIL_BACKEND") or "gloo"


def device() -> torch.device:
    """Where this rank computes: the GPU of its local rank under NCCL, else the CPU."""
    on_gpu = backend_name() == "nccl"
    return torch.device("cuda", int(os.environ.get("LOCAL_RANK", "0"))) if on_gpu else torch.device("cpu")


def _require_one_process_per_rank(tensor_parallel_size: int) -> None:
    launched = dist.get_world_size()
    if launched == tensor_parallel_size:
        return
    raise ValueError(f"{launched} processes were started for tensor_model_parallel_size={tensor_parallel_size}: "
                     "start one process per tensor-parallel rank (scripts/launch.sh reads the size from the config)")


def init_distributed(tensor_parallel_size: int) -> None:
    """Join the job, check its size and build megatron-core's tensor-parallel groups."""
    here = device()
    if here.type == "cuda":
        torch.cuda.set_device(here)
    dist.init_process_group(backend=backend_name())
    _require_one_process_per_rank(tensor_parallel_size)
    parallel_state.initialize_model_parallel(tensor_model_parallel_size=tensor_parallel_size)


def tp_rank() -> int:
    """This process's tensor-parallel rank (which chunk of the sequence and of the FFN it holds)."""
    return parallel_state.get_tensor_model_parallel_rank()


def tp_size() -> int:
    return parallel_state.get_tensor_model_parallel_world_size()


def tp_group() -> dist.ProcessGroup:
    return parallel_state.get_tensor_model_parallel_group()


def shutdown() -> None:
    """Leave the job once every rank got here, then exit without C++ static destructors (torch
    2.13's gloo can abort in them after a clean run)."""
    if not dist.is_initialized():
        os._exit(0)
    dist.barrier()
    parallel_state.destroy_model_parallel()
    dist.destroy_process_group()
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    os._exit(0)
