"""Writes a synthetic training table (`python -m twinhead.prepare [path] [rows]`).

Both targets are smooth functions of their feature block plus noise; a few rows carry the
extreme readings the production feed also contains (sensor saturation, returned bulk orders).
"""
from __future__ import annotations

import sys
from pathlib import Path

import torch


def make_table(rows: int = 512, features: int = 8, seed: int = 0) -> dict[str, torch.Tensor]:
    gen = torch.Generator().manual_seed(seed)
    x_demand = torch.randn(rows, features, generator=gen)
    x_returns = torch.randn(rows, features, generator=gen)
    target = torch.stack([torch.tanh(x_demand[:, :3].sum(1)), 0.5 * torch.sin(x_returns[:, 1:4].sum(1))], 1)
    target += 0.1 * torch.randn(rows, 2, generator=gen)
    extreme = torch.randperm(rows, generator=gen)[: max(1, rows // 64)]
    column = torch.randint(0, 2, (extreme.numel(),), generator=gen)
    target[extreme, column] = 2.0e4
    return {"x_demand": x_demand, "x_returns": x_returns, "target": target}


def main() -> None:
    path = Path(sys.argv[1] if len(sys.argv) > 1 else "data/train.pt")
    rows = int(sys.argv[2]) if len(sys.argv) > 2 else 512
    path.parent.mkdir(parents=True, exist_ok=True)
    torch.save(make_table(rows), path)
    print(f"wrote {rows} rows to {path}")


if __name__ == "__main__":
    main()
