"""Typed view of the per-rank records the observer writes."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

Tensors = dict[str, torch.Tensor]


@dataclass(frozen=True)
class UpdateRecord:
    """One optimizer update as one rank saw it."""

    params: Tensors
    grads: dict[str, torch.Tensor | None]
    rows: list[list[int]]
    forwards: int


@dataclass(frozen=True)
class RankRecord:
    """Everything one rank recorded."""

    rank: int
    updates: list[UpdateRecord]
    final_param_hash: str
    t_first_forward: float
    t_done: float


def _rank_record(raw: dict[str, Any]) -> RankRecord:
    updates = [
        UpdateRecord(
            params=u["params"], grads=u["grads"], rows=u["rows"], forwards=int(u["forwards"])
        )
        for u in raw["updates"]
    ]
    return RankRecord(
        rank=int(raw["rank"]),
        updates=updates,
        final_param_hash=str(raw["final_param_hash"]),
        t_first_forward=float(raw["t_first_forward"]),
        t_done=float(raw["t_done"]),
    )


def missing_ranks(directory: Path, world_size: int) -> list[int]:
    """Ranks whose record file is absent."""
    return [r for r in range(world_size) if not (directory / f"rank{r}.pt").is_file()]


def load_records(directory: Path, world_size: int) -> list[RankRecord]:
    """Load every rank's record, in rank order."""
    return [
        _rank_record(torch.load(directory / f"rank{r}.pt", weights_only=True))
        for r in range(world_size)
    ]
