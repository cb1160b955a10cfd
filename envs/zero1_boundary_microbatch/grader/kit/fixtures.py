"""The initial weights and the dataset of a scenario: pure functions of it (the run kit writes
them, the judge draws them again). ``prepare`` is the workspace's ``surrogate.prepare`` recipe
written out, so the shipped seed gives the shipped files; ``grader`` is the grader's own draw.
With ``shards = "identical"`` every rank's slice of a global batch is a copy of rank 0's.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import torch
from scenario import Scenario
from torch import nn


@dataclass(frozen=True)
class Inputs:
    """Initial fp32 weights (README names) and the dataset rows in file order."""

    init: dict[str, torch.Tensor]
    x: torch.Tensor
    y: torch.Tensor


def _linear_defaults(sc: Scenario) -> dict[str, torch.Tensor]:
    """``torch.manual_seed(seed)``, then the layers built in the model's order."""
    torch.manual_seed(sc.seed)
    state: dict[str, torch.Tensor] = {}
    for name, (fan_out, fan_in) in sc.shapes[::2]:
        layer = nn.Linear(fan_in, fan_out)
        state[name] = layer.weight.detach().clone()
        state[name.replace(".weight", ".bias")] = layer.bias.detach().clone()
    return state


def _teacher_rows(sc: Scenario, rows: int) -> tuple[torch.Tensor, torch.Tensor]:
    gen = torch.Generator().manual_seed(sc.seed + 1)
    d_in, d_out = sc.input_dim, sc.output_dim
    x = torch.randn(rows, d_in, generator=gen)
    hidden = torch.randn(d_in, 4 * d_in, generator=gen) / d_in**0.5
    readout = torch.randn(4 * d_in, d_out, generator=gen) / (4 * d_in) ** 0.5
    return x, torch.tanh(x @ hidden) @ readout + 0.05 * torch.randn(rows, d_out, generator=gen)


def _grader_draw(sc: Scenario, rows: int) -> tuple[dict[str, torch.Tensor], torch.Tensor, torch.Tensor]:
    gen = torch.Generator().manual_seed(sc.seed)
    init = {}
    for name, shape in sc.shapes:
        draw = torch.randn(shape, generator=gen)
        init[name] = draw / shape[1] ** 0.5 if name.endswith(".weight") else 0.1 * draw
    x = torch.randn(rows, sc.input_dim, generator=gen)
    proj = torch.randn(sc.input_dim, sc.output_dim, generator=gen) / sc.input_dim**0.5
    return init, x, torch.sin(2.0 * x @ proj) + 0.3 * torch.randn(rows, sc.output_dim, generator=gen)


def make_inputs(sc: Scenario) -> Inputs:
    """The scenario's initial weights and its ``sc.dataset_rows`` rows of data."""
    rows = sc.dataset_rows
    if sc.fixtures == "prepare":
        init = _linear_defaults(sc)
        x, y = _teacher_rows(sc, rows)
    else:
        init, x, y = _grader_draw(sc, rows)
    if sc.shards == "identical":
        first = [t.view(sc.steps, sc.devices, -1, t.shape[-1])[:, :1] for t in (x, y)]
        x, y = (t.expand(-1, sc.devices, -1, -1).reshape(rows, -1) for t in first)
    return Inputs(init=init, x=x.contiguous(), y=y.contiguous())


def write_inputs(sc: Scenario, folder: Path) -> tuple[Path, Path]:
    """Save the inputs in the README's formats; where the weights and the data went."""
    inputs = make_inputs(sc)
    folder.mkdir(parents=True, exist_ok=True)
    weights, data = folder / "init.pt", folder / "train.pt"
    torch.save(inputs.init, weights)
    torch.save({"x": inputs.x, "y": inputs.y}, data)
    return weights, data
