"""Momentum SGD whose state is sharded over the data-parallel replicas of a stage (ZeRO-1 style).

All gradients of a stage live in one flat buffer (parameters in module order, padded to a
multiple of the replica count); each parameter's ``.grad`` is a view into it, so backward
accumulates straight into the buffer. ``reduce_gradients`` reduce-scatters the buffer over the
stage's replicas: replica d then holds the averaged gradient of its own contiguous shard
[d * S, (d + 1) * S). ``step`` updates that shard (momentum kept for the shard only) and
all-gathers the new weights so that every replica holds the whole stage again.
"""
from __future__ import annotations

import torch
import torch.distributed as dist


class ShardedMomentumSGD:
    def __init__(self, params, lr: float, momentum: float, group, dp_size: int, dp_rank: int) -> None:
        self.params = [p for p in params if p.requires_grad]
        self.lr, self.momentum = lr, momentum
        self.group, self.dp_size, self.dp_rank = group, dp_size, dp_rank
        numel = sum(p.numel() for p in self.params)
        self.shard = -(-numel // dp_size)
        self.flat_grad = torch.zeros(self.shard * dp_size)
        self.offsets = []
        offset = 0
        for p in self.params:
            self.offsets.append(offset)
            p.grad = self.flat_grad[offset:offset + p.numel()].view_as(p)
            offset += p.numel()
        self.lo, self.hi = dp_rank * self.shard, (dp_rank + 1) * self.shard
        self.buf = torch.zeros(self.shard)

    def zero_grad(self) -> None:
        self.flat_grad.zero_()

    def _flat_params(self) -> torch.Tensor:
        flat = torch.zeros_like(self.flat_grad)
        for p, off in zip(self.params, self.offsets):
            flat[off:off + p.numel()] = p.detach().reshape(-1)
        return flat

    def reduce_gradients(self) -> None:
        """Average the buffer over the replicas; this replica keeps its own shard of the result."""
        if self.dp_size == 1:
            return
        mine = torch.empty(self.shard)
        dist.reduce_scatter_tensor(mine, self.flat_grad, group=self.group)
        self.flat_grad[self.lo:self.hi] = mine / self.dp_size

    @torch.no_grad()
    def step(self) -> None:
        flat = self._flat_params()
        grad = self.flat_grad[self.lo:self.hi]
        self.buf.mul_(self.momentum).add_(grad)
        shard = flat[self.lo:self.hi] - self.lr * self.buf
        if self.dp_size > 1:
            dist.all_gather_into_tensor(flat, shard.contiguous(), group=self.group)
        else:
            flat = shard
        for p, off in zip(self.params, self.offsets):
            p.copy_(flat[off:off + p.numel()].view_as(p))
