"""Process layout: which pipeline stage and data-parallel replica each rank is, and the groups.

Ranks are laid out stage-major, as Megatron does: rank = stage * dp_size + dp_rank. Stage 0
holds the token embedding, stage P-1 holds the output layer, which reuses the embedding table
(its own copy of it, since the two stages live in different processes).
"""
from __future__ import annotations

from dataclasses import dataclass

import torch.distributed as dist


@dataclass
class Layout:
    stages: int
    dp_size: int
    stage: int
    dp_rank: int
    dp_group: object = None          # the replicas of this stage
    tied_group: object = None        # first and last stage of this replica (holders of the table)

    @property
    def first(self) -> bool:
        return self.stage == 0

    @property
    def last(self) -> bool:
        return self.stage == self.stages - 1

    def rank_of(self, stage: int, dp_rank: int | None = None) -> int:
        return stage * self.dp_size + (self.dp_rank if dp_rank is None else dp_rank)

    @property
    def prev_rank(self) -> int:
        return self.rank_of(self.stage - 1)

    @property
    def next_rank(self) -> int:
        return self.rank_of(self.stage + 1)


def build(stages: int) -> Layout:
    world, rank = dist.get_world_size(), dist.get_rank()
    if stages < 2 or world % stages:
        raise SystemExit(f"{world} processes cannot hold {stages} pipeline stages")
    dp_size = world // stages
    lay = Layout(stages, dp_size, rank // dp_size, rank % dp_size)
    # every rank creates every group, in the same order
    for stage in range(stages):
        group = dist.new_group([stage * dp_size + d for d in range(dp_size)])
        if stage == lay.stage:
            lay.dp_group = group
    for d in range(dp_size):
        group = dist.new_group([d, (stages - 1) * dp_size + d])
        if d == lay.dp_rank:
            lay.tied_group = group
    return lay
