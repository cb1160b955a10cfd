"""The specified run, replayed by the judge (trusted; no revision code).

The order is torch's own ``DistributedSampler`` per rank, ``set_epoch(e)`` before epoch ``e``,
cut into the README's batches (a last shorter batch kept unless ``drop_last``). Training is
replayed in float64 in one process: a step's gradient is the mean over ranks of each rank's
batch-mean cross-entropy gradient (what DDP averages), then ``torch.optim.SGD(lr, momentum)``
written out (``compare.sgd_step``).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from compare import sgd_step  # the harness library
from scenario import Scenario
from torch.utils.data import DistributedSampler

#: ``plan[step][rank]``: the table rows of that rank's batch at that step.
Plan = list[list[list[int]]]


def rank_batches(sc: Scenario, rank: int, epoch: int) -> list[list[int]]:
    sampler = DistributedSampler(range(sc.rows), num_replicas=sc.ranks, rank=rank, shuffle=True,
                                 seed=sc.shuffle_seed, drop_last=sc.drop_last)  # fmt: skip
    sampler.set_epoch(epoch)
    order = list(sampler)
    cuts = [order[i : i + sc.batch_size] for i in range(0, len(order), sc.batch_size)]
    return [c for c in cuts if len(c) == sc.batch_size or not sc.drop_last]


def plan(sc: Scenario) -> Plan:
    steps: Plan = []
    for epoch in range(sc.epochs):
        per_rank = [rank_batches(sc, r, epoch) for r in range(sc.ranks)]
        steps.extend([list(batch) for batch in zip(*per_rank, strict=True)])
    return steps


def train(sc: Scenario, windows: torch.Tensor, gesture: torch.Tensor, init: dict[str, torch.Tensor],
          steps: Plan) -> dict[str, torch.Tensor]:  # fmt: skip
    """The weights after every step of ``steps``, float64."""
    torch.set_num_threads(1)
    x = windows.double()
    p = {k: v.double().clone().requires_grad_(True) for k, v in init.items()}
    params = list(p.values())
    momentum: list[torch.Tensor | None] = [None] * len(params)
    for batches in steps:
        for param in params:
            param.grad = None
        for rows in batches:
            idx = torch.tensor(rows)
            logits = torch.tanh(x[idx] @ p["fc1.weight"].T + p["fc1.bias"]) @ p["fc2.weight"].T + p["fc2.bias"]
            (F.cross_entropy(logits, gesture[idx]) / len(batches)).backward()  # type: ignore[no-untyped-call]
        sgd_step(params, momentum, sc.lr, momentum=sc.momentum)
    return {k: v.detach() for k, v in p.items()}
