"""The training table and how ranks read it.

The file holds `x_demand [N, F]`, `x_returns [N, F]` and `target [N, 2]`. Step `s` reads the
global batch of rows `[s * G, (s + 1) * G)` with `G = world * rows_per_rank`; rank `r` takes
the `r`-th slice of `rows_per_rank` rows. Rows wrap around the end of the file.
"""
from __future__ import annotations

from pathlib import Path

import torch

FIELDS = ("x_demand", "x_returns", "target")


def load_table(path: str | Path) -> dict[str, torch.Tensor]:
    table = torch.load(path, map_location="cpu", weights_only=True)
    rows = {name: table[name].float() for name in FIELDS}
    n = rows["target"].shape[0]
    if any(t.shape[0] != n for t in rows.values()):
        raise ValueError(f"{path}: fields hold different row counts")
    return rows


def micro_batch(table: dict[str, torch.Tensor], step: int, rank: int, world: int, rows: int):
    n = table["target"].shape[0]
    start = (step * world + rank) * rows
    index = torch.arange(start, start + rows) % n
    return tuple(table[name][index] for name in FIELDS)
