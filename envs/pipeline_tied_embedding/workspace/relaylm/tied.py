"""The embedding table is used twice: as the input embedding (stage 0) and as the output layer
(last stage). Each holder's backward only sees its own use, so the table's gradient is the sum
of the two; it is summed over the tied group (first and last stage of one replica)."""
from __future__ import annotations

import torch.distributed as dist


def allreduce_tied_grad(stage, lay) -> None:
    weight = stage.tied_weight()
    if weight is None:
        return
    dist.all_reduce(weight.grad, group=lay.tied_group)
