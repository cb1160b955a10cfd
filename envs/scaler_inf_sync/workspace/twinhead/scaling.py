"""Loss scaling for sharded parameters.

`torch.amp.GradScaler` looks for inf/nan only in the gradients this rank holds. Under FSDP
each rank holds one shard of the flat gradient, so the overflow flag is combined across the
process group. The reduction is started in `unscale_` and completed in `update`, so that it
runs while the optimizer step is being prepared.
"""
from __future__ import annotations

import torch
import torch.distributed as dist


class ShardScaler(torch.amp.GradScaler):
    def __init__(self, *, group: dist.ProcessGroup | None = None, **kwargs) -> None:
        super().__init__("cpu", **kwargs)
        self.group = group
        self._inflight: list[tuple[torch.Tensor, torch.Tensor, dist.Work]] = []

    def unscale_(self, optimizer: torch.optim.Optimizer) -> None:
        super().unscale_(optimizer)
        if not (dist.is_available() and dist.is_initialized()):
            return
        per_device = self._per_optimizer_states[id(optimizer)]["found_inf_per_device"]
        for flag in per_device.values():
            combined = flag.clone()
            work = dist.all_reduce(combined, op=dist.ReduceOp.MAX, group=self.group, async_op=True)
            self._inflight.append((flag, combined, work))

    def update(self, new_scale: float | torch.Tensor | None = None) -> None:
        for flag, combined, work in self._inflight:
            work.wait()
            flag.copy_(combined)
        self._inflight.clear()
        super().update(new_scale)
