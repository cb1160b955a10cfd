"""Sensor windows on disk and how a step's rows are split over ranks and micro-steps.

A signals file is a `torch.save`d dict: `x` float `[N, channels, window]`, `y` int64 `[N]`.
Optimizer step `s` consumes the global batch of rows `[s*G, (s+1)*G)`, with
`G = world * accum_steps * rows_per_rank`; micro-step `m` of rank `r` takes the
`(m * world + r)`-th block of `rows_per_rank` rows of it. Rows wrap around the end of the file.
"""
from __future__ import annotations

from pathlib import Path

import torch
import torch.distributed as dist


def synthesize(rows: int, channels: int, window: int, classes: int, seed: int) -> dict[str, torch.Tensor]:
    """Vibration-like windows: a per-class base frequency on every channel plus noise."""
    gen = torch.Generator().manual_seed(seed)
    y = torch.randint(0, classes, (rows,), generator=gen)
    t = torch.arange(window, dtype=torch.float32)
    phase = 6.2832 * torch.rand(rows, channels, 1, generator=gen)
    freq = (0.15 + 0.1 * y.float()).view(rows, 1, 1)
    x = torch.sin(freq * t + phase) + 0.3 * torch.randn(rows, channels, window, generator=gen)
    return {"x": x, "y": y}


def open_signals(recipe, rank: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The recipe's `data_file`; when it does not exist yet, rank 0 synthesises one first."""
    path = Path(recipe.data_file)
    missing = not path.exists()
    if missing and rank == 0:
        blob = synthesize(64 * recipe.rows_per_rank, recipe.channels, recipe.window, recipe.classes, recipe.seed)
        path.parent.mkdir(parents=True, exist_ok=True)
        torch.save(blob, path)
    dist.barrier()  # the others wait for the file
    return load(path)


def load(path: str | Path) -> tuple[torch.Tensor, torch.Tensor]:
    blob = torch.load(path, map_location="cpu", weights_only=True)
    x, y = blob["x"].float(), blob["y"].long()
    if x.dim() != 3 or y.shape != (x.shape[0],):
        raise SystemExit(f"{path}: expected x [N, C, T] and y [N], got {tuple(x.shape)} and {tuple(y.shape)}")
    return x, y


def micro_batch(x: torch.Tensor, y: torch.Tensor, step: int, micro: int, rank: int, world: int,
                accum_steps: int, rows: int) -> tuple[torch.Tensor, torch.Tensor]:
    block = (step * accum_steps + micro) * world + rank
    index = torch.arange(block * rows, (block + 1) * rows) % x.shape[0]
    return x[index], y[index]
