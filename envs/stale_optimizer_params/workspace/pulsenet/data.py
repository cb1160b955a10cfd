"""Pulse windows: `features` readings per window and a class label in [0, classes).

`python -m pulsenet.data [path]` writes a synthetic table with the shipped shape. At step `s`
the global batch is the `world * per_rank` windows starting at row `s * world * per_rank`
(wrapping at the end of the table); rank `r` reads every `world`-th window of it, from the
`r`-th on.
"""
from __future__ import annotations

import sys
from pathlib import Path

import torch


def synthesize(rows: int = 1024, features: int = 12, classes: int = 5, seed: int = 0) -> dict:
    gen = torch.Generator().manual_seed(seed)
    centres = 1.5 * torch.randn(classes, features, generator=gen)
    label = torch.randint(0, classes, (rows,), generator=gen)
    window = centres[label] + torch.randn(rows, features, generator=gen)
    return {"window": window, "label": label}


def load(path: str | Path) -> tuple[torch.Tensor, torch.Tensor]:
    blob = torch.load(path, map_location="cpu", weights_only=True)
    window, label = blob["window"].float(), blob["label"].long()
    if window.shape[0] != label.shape[0]:
        raise ValueError(f"{path}: {window.shape[0]} windows but {label.shape[0]} labels")
    return window, label


def rank_rows(step: int, rank: int, world: int, per_rank: int, total: int) -> torch.Tensor:
    first = step * world * per_rank
    return (first + rank + world * torch.arange(per_rank)) % total


if __name__ == "__main__":
    out = Path(sys.argv[1] if len(sys.argv) > 1 else "data/pulses.pt")
    out.parent.mkdir(parents=True, exist_ok=True)
    torch.save(synthesize(), out)
    print(f"wrote {out}")
