"""Sequence-parallel regions: activations split along the sequence (dim 0) across TP ranks.

megatron-core's own sequence-parallel mappings allocate their buffers on
``torch.cuda.current_device()``; these two do the same with plain collectives, so they run on
CPU ranks too. They are used around megatron-core's tensor-parallel layers built with
``sequence_parallel=False``:

* ``gather_sequence`` (forward all-gather, backward keep own chunk) followed by a
  ``ColumnParallelLinear`` (backward all-reduce) is Megatron's all-gather / reduce-scatter;
* a ``RowParallelLinear`` (forward all-reduce) followed by ``split_sequence`` (forward keep own
  chunk, backward all-gather) is Megatron's reduce-scatter / all-gather.
"""
from __future__ import annotations

from typing import Any

import torch
import torch.distributed as dist

from seqmodel import parallel


def _all_gather_dim0(x: torch.Tensor) -> torch.Tensor:
    parts = [torch.empty_like(x) for _ in range(parallel.tp_size())]
    dist.all_gather(parts, x.contiguous(), group=parallel.tp_group())
    return torch.cat(parts, dim=0)


def _own_chunk(x: torch.Tensor) -> torch.Tensor:
    size = parallel.tp_size()
    if x.shape[0] % size:
        raise ValueError(f"sequence length {x.shape[0]} is not divisible by tensor_model_parallel_size {size}")
    return x.chunk(size, dim=0)[parallel.tp_rank()].contiguous()


class _GatherSequence(torch.autograd.Function):
    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        return _all_gather_dim0(x)

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> torch.Tensor:
        return _own_chunk(grad)


class _SplitSequence(torch.autograd.Function):
    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        return _own_chunk(x)

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> torch.Tensor:
        return _all_gather_dim0(grad)


def gather_sequence(x: torch.Tensor) -> torch.Tensor:
    """[s/tp, b, h] chunks -> the full [s, b, h] sequence on every rank."""
    return _GatherSequence.apply(x) if parallel.tp_size() > 1 else x


def split_sequence(x: torch.Tensor) -> torch.Tensor:
    """The full [s, b, h] sequence -> this rank's [s/tp, b, h] chunk."""
    return _SplitSequence.apply(x) if parallel.tp_size() > 1 else x


def allreduce_sequence_parallel_grads(model: torch.nn.Module) -> None:
    """Sum the gradients of parameters used inside the sequence-parallel region (LayerNorms):
    each rank saw only its chunk of the sequence."""
    if parallel.tp_size() == 1:
        return
    for param in model.parameters():
        if getattr(param, "sequence_parallel", False) and param.grad is not None:
            dist.all_reduce(param.grad, group=parallel.tp_group())
