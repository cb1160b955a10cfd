"""The uninterrupted run the judge holds every resumed run to (trusted; no revision code).

The data order is torch's own ``DistributedSampler`` (shuffled with the scenario's seed and
epoch, ``drop_last``) per rank, cut into micro-batches and accumulation windows as the README
specifies: an epoch is the whole windows of a rank's shard, the rest of it is not used. Training
is replayed in float64 in one process: a step's gradient is the mean over ranks of each rank's
sum over its window of ``grad(mse(micro-batch)) / accumulation`` (what DDP all-reduces), then
``torch.optim.SGD(lr, momentum)`` written out (``compare.sgd_step``).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from compare import sgd_step  # the harness library
from fixtures import Inputs
from scenario import Scenario
from torch.utils.data import DistributedSampler

#: ``order[step][rank]``: the micro-batches (lists of table rows) of that step's window.
Order = list[list[list[list[int]]]]


@dataclass(frozen=True)
class Reference:
    order: Order
    #: float64 parameters after global step ``k`` (only the steps asked for).
    states: dict[int, dict[str, torch.Tensor]]

    def consumed(self, sc: Scenario, segment: int, rank: int) -> list[list[int]]:
        """The micro-batches ``rank`` consumes in launch ``segment``."""
        start, stop = sc.segments[segment]
        return [micro for step in range(start, stop) for micro in self.order[step][rank]]


def window_order(sc: Scenario) -> Order:
    """Every global step's windows per rank, for ``sc.max_steps`` steps."""
    steps: Order = []
    epoch, b, a = 0, sc.micro_batch_size, sc.accumulation
    while len(steps) < sc.max_steps:
        shards = []
        for rank in range(sc.ranks):
            sampler = DistributedSampler(range(sc.rows), num_replicas=sc.ranks, rank=rank, shuffle=True,
                                         seed=sc.shuffle_seed, drop_last=True)  # fmt: skip
            sampler.set_epoch(epoch)
            rows = list(sampler)
            shards.append([rows[i * b : (i + 1) * b] for i in range(sc.micro_batches_per_rank)])
        for k in range(min(sc.updates_per_epoch, sc.max_steps - len(steps))):
            steps.append([shard[k * a : (k + 1) * a] for shard in shards])
        epoch += 1
    return steps


def uninterrupted(sc: Scenario, inputs: Inputs, keep: set[int]) -> Reference:
    """Replay the run that is never stopped; keep the parameters after the steps in ``keep``."""
    torch.set_num_threads(1)  # one summation order for the replay, run after run
    order = window_order(sc)
    x, y = inputs.features.double(), inputs.target.double()
    p = {k: v.double().clone().requires_grad_(True) for k, v in inputs.init.items()}
    params = list(p.values())
    buffers: list[torch.Tensor | None] = [None] * len(params)
    states = {}
    for step, windows in enumerate(order, start=1):
        for param in params:
            param.grad = None
        for window in windows:
            for micro in window:
                idx = torch.tensor(micro)
                pred = torch.tanh(x[idx] @ p["fc1.weight"].T + p["fc1.bias"]) @ p["fc2.weight"].T + p["fc2.bias"]
                loss = torch.nn.functional.mse_loss(pred, y[idx]) / (sc.accumulation * sc.ranks)
                loss.backward()  # type: ignore[no-untyped-call]
        sgd_step(params, buffers, sc.lr, momentum=sc.momentum)
        if step in keep:
            states[step] = {k: v.detach().clone() for k, v in p.items()}
    return Reference(order, states)
