"""The judge's uninterrupted reference: what every rank consumes and what the model becomes.

Trusted, and independent of the revision: the data order comes from torch's own
``DistributedSampler`` (shuffle, the scenario's seed, ``drop_last``) per rank and epoch, cut into
micro-batches and accumulation windows as the README specifies (an epoch is whole windows of a
rank's shard; the rest of the shard is not used). Training is replayed in float64 in one
process: the step's gradient is the mean over ranks of each rank's sum over its window of
``grad(mse(micro-batch)) / accumulation`` (what DDP all-reduces), and the step is
``torch.optim.SGD`` with the scenario's learning rate and momentum.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch
from fixtures import Inputs
from scenario import Scenario
from torch.utils.data import DistributedSampler


@dataclass(frozen=True)
class Reference:
    """``order[step-1][rank]`` = the micro-batches (row-index lists) of that step's window;
    ``states[k]`` = the float64 parameters after global step ``k`` (0: the warm start)."""

    order: list[list[list[list[int]]]]
    states: dict[int, dict[str, torch.Tensor]]


def window_order(sc: Scenario) -> list[list[list[list[int]]]]:
    """Every global step's micro-batches per rank, uninterrupted, for ``sc.max_steps`` steps."""
    steps: list[list[list[list[int]]]] = []
    epoch = 0
    while len(steps) < sc.max_steps:
        per_rank = []
        for rank in range(sc.world_size):
            sampler = DistributedSampler(range(sc.rows), num_replicas=sc.world_size, rank=rank, shuffle=True,
                                         seed=sc.shuffle_seed, drop_last=True)
            sampler.set_epoch(epoch)
            indices = list(sampler)
            b = sc.micro_batch_size
            micro = [indices[i * b:(i + 1) * b] for i in range(sc.micro_batches_per_rank)]
            per_rank.append(micro)
        for update in range(sc.updates_per_epoch):
            if len(steps) == sc.max_steps:
                break
            a = sc.accumulation
            steps.append([per_rank[r][update * a:(update + 1) * a] for r in range(sc.world_size)])
        epoch += 1
    return steps


def reference(sc: Scenario, inputs: Inputs, keep: set[int]) -> Reference:
    """Replay the uninterrupted run; keep the states after the steps in ``keep``."""
    order = window_order(sc)
    x = inputs.features.double()
    y = inputs.target.double()
    params = {k: v.double().clone().requires_grad_(True) for k, v in inputs.init.items()}
    opt = torch.optim.SGD(list(params.values()), lr=sc.lr, momentum=sc.momentum)
    states = {0: {k: v.detach().clone() for k, v in params.items()}}
    for step, windows in enumerate(order, start=1):
        opt.zero_grad(set_to_none=True)
        for rank_windows in windows:
            for micro in rank_windows:
                idx = torch.tensor(micro)
                hidden = torch.tanh(x[idx] @ params["fc1.weight"].T + params["fc1.bias"])
                pred = hidden @ params["fc2.weight"].T + params["fc2.bias"]
                loss = torch.nn.functional.mse_loss(pred, y[idx]) / (sc.accumulation * sc.world_size)
                loss.backward()
        opt.step()
        if step in keep:
            states[step] = {k: v.detach().clone() for k, v in params.items()}
    return Reference(order, states)


def expected_forwards_all(ref: Reference, sc: Scenario, segment: int, rank: int) -> list[list[int]]:
    """The micro-batches rank ``rank`` consumes in launch ``segment`` of the scenario."""
    start, stop = sc.segments[segment]
    return [micro for step in range(start, stop) for micro in ref.order[step][rank]]
