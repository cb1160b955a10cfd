"""Process groups: every process is one tensor-parallel rank (megatron-core ``parallel_state``)."""
from __future__ import annotations

import os
import sys

import torch
import torch.distributed as dist
from megatron.core import parallel_state


def backend_name() -> str:
    """``gloo`` on CPU hosts unless the environment asks for another backend."""
    return os.environ.get("TRAINFAIL_BACKEND", "gloo")


def device() -> torch.device:
    """This rank's device: its GPU under NCCL, otherwise the CPU."""
    if backend_name() == "nccl":
        return torch.device("cuda", int(os.environ.get("LOCAL_RANK", "0")))
    return torch.device("cpu")


def init_distributed(tensor_parallel_size: int) -> None:
    """Start torch.distributed and build the tensor-parallel groups."""
    if backend_name() == "nccl":
        torch.cuda.set_device(device())
    dist.init_process_group(backend=backend_name())
    world = dist.get_world_size()
    if world != tensor_parallel_size:
        raise ValueError(
            f"launched {world} processes for tensor_model_parallel_size={tensor_parallel_size}; "
            "start exactly one process per tensor-parallel rank"
        )
    parallel_state.initialize_model_parallel(tensor_model_parallel_size=tensor_parallel_size)


def tp_rank() -> int:
    return parallel_state.get_tensor_model_parallel_rank()


def tp_size() -> int:
    return parallel_state.get_tensor_model_parallel_world_size()


def tp_group() -> dist.ProcessGroup:
    return parallel_state.get_tensor_model_parallel_group()


def shutdown() -> None:
    """Tear down the groups and leave the process.

    ``os._exit`` skips C++ static destructors: with torch 2.13 gloo occasionally aborts in
    them after a run has finished cleanly.
    """
    if dist.is_initialized():
        dist.barrier()
        parallel_state.destroy_model_parallel()
        dist.destroy_process_group()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)
