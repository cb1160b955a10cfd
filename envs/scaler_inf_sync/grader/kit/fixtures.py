"""The grader's own initial weights and training table: pure functions of the scenario.

The run kit writes them for the pipeline (`model.init`, `data.path`); the judge regenerates them.
"""
from __future__ import annotations

from pathlib import Path

import torch


def initial_state(sc) -> dict[str, torch.Tensor]:
    """TwinHead's state dict layout (the README's model), drawn from the scenario's seed."""
    gen = torch.Generator().manual_seed(1000 + sc.seed)
    state = {}
    for tower in ("demand", "returns"):
        state[f"{tower}.inp.weight"] = torch.randn(sc.hidden, sc.features, generator=gen) / sc.features ** 0.5
        state[f"{tower}.inp.bias"] = 0.1 * torch.randn(sc.hidden, generator=gen)
        state[f"{tower}.out.weight"] = torch.randn(1, sc.hidden, generator=gen) / sc.hidden ** 0.5
        state[f"{tower}.out.bias"] = torch.zeros(1)
    return state


def extreme_cells(sc) -> list[tuple[int, int]]:
    """(row, column) of every extreme target."""
    rank = sc.extreme_rank % sc.world
    cells = []
    for k, step in enumerate(sc.extreme_steps):
        first = (step * sc.world + rank) * sc.rows_per_rank
        if sc.extremes == "demand" or (sc.extremes == "alternate" and k % 2 == 0):
            cells.append((first + 1, 0))
        elif sc.extremes == "returns" or (sc.extremes == "alternate" and k % 2 == 1):
            cells.append((first + 1, 1))
        elif sc.extremes == "both":
            other = ((step * sc.world + (rank + 1) % sc.world) * sc.rows_per_rank)
            cells += [(first + 1, 0), (other + 2, 1)]
    return cells


def table(sc) -> dict[str, torch.Tensor]:
    gen = torch.Generator().manual_seed(2000 + sc.seed)
    x_demand = torch.randn(sc.rows, sc.features, generator=gen)
    x_returns = torch.randn(sc.rows, sc.features, generator=gen)
    target = torch.stack([torch.tanh(x_demand[:, :3].sum(1)), 0.5 * torch.sin(x_returns[:, 1:4].sum(1))], 1)
    target += 0.1 * torch.randn(sc.rows, 2, generator=gen)
    for row, column in extreme_cells(sc):
        target[row, column] = sc.extreme_value * (1 if row % 2 else -1)
    return {"x_demand": x_demand, "x_returns": x_returns, "target": target}


def write_inputs(sc, folder: Path) -> tuple[Path, Path]:
    folder.mkdir(parents=True, exist_ok=True)
    weights, data = folder / "init.pt", folder / "table.pt"
    torch.save(initial_state(sc), weights)
    torch.save(table(sc), data)
    return weights, data
