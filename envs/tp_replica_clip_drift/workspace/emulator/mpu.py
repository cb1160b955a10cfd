"""Megatron-LM's ``mpu`` module surface, which DeepSpeed queries, over megatron-core.

Passed to ``deepspeed.initialize(mpu=...)`` as a module. Model parallelism is tensor
parallelism only here: no pipeline stages, and every data-parallel group has one rank.
"""
from __future__ import annotations

from megatron.core.parallel_state import (
    get_data_parallel_group,
    get_data_parallel_rank,
    get_data_parallel_world_size,
    get_model_parallel_group,
    get_pipeline_model_parallel_group,
    get_pipeline_model_parallel_rank,
    get_pipeline_model_parallel_world_size,
    get_tensor_model_parallel_group,
    get_tensor_model_parallel_rank,
    get_tensor_model_parallel_src_rank,
    get_tensor_model_parallel_world_size,
)

get_model_parallel_rank = get_tensor_model_parallel_rank
get_model_parallel_world_size = get_tensor_model_parallel_world_size

__all__ = [
    "get_data_parallel_group",
    "get_data_parallel_rank",
    "get_data_parallel_world_size",
    "get_model_parallel_group",
    "get_model_parallel_rank",
    "get_model_parallel_world_size",
    "get_pipeline_model_parallel_group",
    "get_pipeline_model_parallel_rank",
    "get_pipeline_model_parallel_world_size",
    "get_tensor_model_parallel_group",
    "get_tensor_model_parallel_rank",
    "get_tensor_model_parallel_src_rank",
    "get_tensor_model_parallel_world_size",
]
