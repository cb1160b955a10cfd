"""In every rank: how the DeepSpeed MoE layers that train are laid out (a claim, not a measurement).

Each forward of a ``deepspeed.moe.layer.MoE`` module counts, with the layer's ``ep_size``, its
number of local experts and the size of the group its all-to-all runs over. After
``TRAINFAIL_OBSERVE_STEPS`` such forwards the rank writes ``rank<R>.pt`` (the SDK's record):
``{"forwards": n, "layers": [[ep_size, local_experts, group_size], ...]}``, one entry per
distinct layout. It runs in the revision's process: the judge uses it only to see that expert
parallelism was not switched off; every number a verdict rests on is the judge's own.
"""

from __future__ import annotations

from typing import Any

import torch.distributed as dist
from rank_observer import RankObserver  # the harness library's observer base
from torch import nn


class ExpertLayout(RankObserver):
    """Counts MoE forwards and the layouts they ran with."""

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.moe_forwards = 0
        self.layouts: list[list[int]] = []

    def _forward_pre(self, module: nn.Module, args: tuple[Any, ...]) -> None:
        super()._forward_pre(module, args)
        if self.written or type(module).__name__ != "MoE" or not type(module).__module__.startswith("deepspeed."):
            return
        group = getattr(getattr(module, "deepspeed_moe", None), "ep_group", None)
        layout = [int(getattr(module, "ep_size", -1)), int(getattr(module, "num_local_experts", -1)),
                  dist.get_world_size(group=group) if group is not None else -1]
        if layout not in self.layouts:
            self.layouts.append(layout)
        self.moe_forwards += 1
        if self.moe_forwards >= self.steps:
            self.write({"forwards": self.moe_forwards, "layers": self.layouts})


def install() -> None:
    """Start the observer in this rank when the job is observed."""
    observer = ExpertLayout.from_env()
    if observer is not None:
        observer.install(steps=False)
