"""The grader's own initial weights and table: pure functions of the scenario.

The run kit writes them for the pipeline (`model.weights`, `data.table`); the judge
regenerates them. Names and shapes are the README's model (`state_dict()` layout).
"""
from __future__ import annotations

from pathlib import Path

import torch


def layout(sc) -> dict[str, tuple[int, ...]]:
    f, w, c = sc.features, sc.width, sc.classes
    shapes = {"stem.weight": (w, f), "stem.bias": (w,)}
    for b in range(sc.blocks):
        shapes |= {f"blocks.{b}.norm.weight": (w,), f"blocks.{b}.norm.bias": (w,),
                   f"blocks.{b}.up.weight": (2 * w, w), f"blocks.{b}.up.bias": (2 * w,),
                   f"blocks.{b}.down.weight": (w, 2 * w), f"blocks.{b}.down.bias": (w,)}
    shapes |= {"norm.weight": (w,), "norm.bias": (w,), "head.weight": (c, w), "head.bias": (c,)}
    return shapes


def initial_state(sc) -> dict[str, torch.Tensor]:
    gen = torch.Generator().manual_seed(4100 + sc.seed)
    state = {}
    for name, shape in layout(sc).items():
        if name.endswith("norm.weight"):
            state[name] = 1.0 + 0.1 * torch.randn(shape, generator=gen)
        elif len(shape) == 1:
            state[name] = 0.1 * torch.randn(shape, generator=gen)
        else:
            state[name] = torch.randn(shape, generator=gen) / shape[1] ** 0.5
    return state


def table(sc) -> dict[str, torch.Tensor]:
    gen = torch.Generator().manual_seed(5200 + sc.seed)
    centres = 1.5 * torch.randn(sc.classes, sc.features, generator=gen)
    label = torch.randint(0, sc.classes, (sc.rows,), generator=gen)
    window = centres[label] + torch.randn(sc.rows, sc.features, generator=gen)
    return {"window": window, "label": label}


def write_inputs(sc, folder: Path) -> tuple[Path, Path]:
    """The initial weights and the pulse table, saved in ``folder`` for the pipeline to load."""
    inputs = {folder / "init.pt": initial_state(sc), folder / "pulses.pt": table(sc)}
    folder.mkdir(parents=True, exist_ok=True)
    for path, payload in inputs.items():
        torch.save(payload, path)
    weights, data = inputs
    return weights, data
