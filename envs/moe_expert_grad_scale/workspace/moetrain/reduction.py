"""Gradient reduction for expert-parallel training on our gloo clusters.

DeepSpeed reduces a ZeRO gradient bucket with one ``reduce`` per destination rank, which on
gloo is one round trip per partition. We reduce each bucket with one ``all_reduce`` per
process group instead: dense gradients over the data-parallel group, expert gradients over
their expert-data-parallel group (the ranks that hold a replica of the same experts).
Every rank then holds the reduced bucket and keeps its own partition, as with upstream.

``ProjectZeroOptimizer`` serves ZeRO stages 1 and 2; ``ProjectEngine`` does the same for the
engine's own reduction (ZeRO stage 0). ``install()`` makes ``deepspeed.initialize`` build
both.
"""
from __future__ import annotations

from typing import Any

import deepspeed
import deepspeed.runtime.engine as ds_engine
import torch
import torch.distributed as dist
from deepspeed.moe.utils import is_moe_param
from deepspeed.runtime.engine import DeepSpeedEngine
from deepspeed.runtime.zero.stage_1_and_2 import DeepSpeedZeroOptimizer
from deepspeed.utils import groups


class ProjectZeroOptimizer(DeepSpeedZeroOptimizer):
    """DeepSpeed's ZeRO stage 1/2 optimizer with one all-reduce per group and bucket."""

    def average_tensor(self, tensor: torch.Tensor, communication_data_type: torch.dtype) -> None:
        """Average the gradients packed in ``tensor`` (the bucket, in parameter order) over
        the ranks that share each parameter."""
        bucket = self.ipg_buckets[communication_data_type]
        slices: dict[Any, list[torch.Tensor]] = {}
        offset = 0
        for group_idx, param_idx, _ in bucket.params:
            param = self.bit16_groups[group_idx][param_idx]
            group = (self.expert_dp_process_group[param.group_name] if is_moe_param(param)
                     else self.dp_process_group)
            slices.setdefault(group, []).append(tensor.narrow(0, offset, param.numel()))
            offset += param.numel()
        for group, parts in slices.items():
            flat = self.flatten(parts)
            flat.div_(dist.get_world_size(group=group))
            dist.all_reduce(flat, group=group)
            for part, reduced in zip(parts, self.unflatten(flat, parts)):
                part.copy_(reduced)


class ProjectEngine(DeepSpeedEngine):
    """DeepSpeed's engine; its ZeRO-0 expert reduction skips the sparse-gradient split (the
    model has no sparse gradients) and goes straight to the bucketed all-reduce."""

    def _reduce_expert_gradients(self, expert_grads: dict[str, list[torch.Tensor]],
                                 elements_per_buffer: int) -> None:
        for group_name, grads in expert_grads.items():
            group = groups._get_expert_data_parallel_group(group_name)
            self.allreduce_no_retain(grads, dp_group=group, numel_per_bucket=elements_per_buffer)


def install() -> None:
    """Make ``deepspeed.initialize`` construct :class:`ProjectEngine` and, for ZeRO 1/2,
    :class:`ProjectZeroOptimizer`."""
    deepspeed.DeepSpeedEngine = ProjectEngine  # type: ignore[misc]
    ds_engine.DeepSpeedZeroOptimizer = ProjectZeroOptimizer  # type: ignore[misc]
