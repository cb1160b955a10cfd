"""Process groups for tensor parallelism, and the ``mpu`` object DeepSpeed expects.

Groups come from megatron-core's ``parallel_state``. Every process is one tensor-parallel
rank: this repository does not use data or pipeline parallelism, so the model-parallel
group is the tensor-parallel group and the data-parallel groups have size one.
"""
from __future__ import annotations

import os
import sys

import deepspeed
import torch
import torch.distributed as dist
from megatron.core import parallel_state


def backend_name() -> str:
    """Collective backend: ``gloo`` on CPU hosts unless the environment asks for another."""
    return os.environ.get("TRAINFAIL_BACKEND", "gloo")


def init_distributed(tensor_parallel_size: int) -> None:
    """Start torch.distributed (through DeepSpeed) and build the tensor-parallel groups."""
    deepspeed.init_distributed(dist_backend=backend_name())
    world = dist.get_world_size()
    if world != tensor_parallel_size:
        raise ValueError(
            f"launched {world} processes for tensor_model_parallel_size={tensor_parallel_size}; "
            "start exactly one process per tensor-parallel rank"
        )
    parallel_state.initialize_model_parallel(tensor_model_parallel_size=tensor_parallel_size)


def device() -> torch.device:
    """The device this rank computes on: its GPU under NCCL, otherwise the CPU."""
    if backend_name() == "nccl":
        return torch.device("cuda", int(os.environ.get("LOCAL_RANK", "0")))
    return torch.device("cpu")


def tp_rank() -> int:
    """This process's tensor-parallel rank."""
    return parallel_state.get_tensor_model_parallel_rank()


def tp_size() -> int:
    """Number of tensor-parallel ranks."""
    return parallel_state.get_tensor_model_parallel_world_size()


class MegatronMPU:
    """The ``mpu`` interface of Megatron-LM that DeepSpeed queries for its groups."""

    get_model_parallel_rank = staticmethod(parallel_state.get_tensor_model_parallel_rank)
    get_model_parallel_world_size = staticmethod(parallel_state.get_tensor_model_parallel_world_size)
    get_model_parallel_group = staticmethod(parallel_state.get_model_parallel_group)
    get_tensor_model_parallel_rank = staticmethod(parallel_state.get_tensor_model_parallel_rank)
    get_tensor_model_parallel_world_size = staticmethod(
        parallel_state.get_tensor_model_parallel_world_size
    )
    get_tensor_model_parallel_group = staticmethod(parallel_state.get_tensor_model_parallel_group)
    get_data_parallel_rank = staticmethod(parallel_state.get_data_parallel_rank)
    get_data_parallel_world_size = staticmethod(parallel_state.get_data_parallel_world_size)
    get_data_parallel_group = staticmethod(parallel_state.get_data_parallel_group)
    get_pipeline_model_parallel_rank = staticmethod(parallel_state.get_pipeline_model_parallel_rank)
    get_pipeline_model_parallel_world_size = staticmethod(
        parallel_state.get_pipeline_model_parallel_world_size
    )
    get_pipeline_model_parallel_group = staticmethod(
        parallel_state.get_pipeline_model_parallel_group
    )


def shutdown() -> None:
    """Tear down the groups and leave the process.

    ``os._exit`` skips C++ static destructors: with torch 2.13 gloo occasionally aborts in
    them after a run has finished cleanly, which would turn a good run into a failed job.
    """
    if dist.is_initialized():
        dist.barrier()
        parallel_state.destroy_model_parallel()
        dist.destroy_process_group()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)
