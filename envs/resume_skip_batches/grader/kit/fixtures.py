"""Grader-owned inputs of a scenario: the training table and the warm-start weights.

Shared by the run kit (which writes them for the pipeline) and the judge (which regenerates
them itself and never reads them back from the run). Flavor ``prepare`` is the shipped
``fcast.prepare`` recipe re-implemented, so the shipped seed gives the shipped files; flavor
``grader`` draws other data and weights from the scenario's seed.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import torch
from scenario import Scenario

PARAM_NAMES = ("fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias")


@dataclass(frozen=True)
class Inputs:
    """The table (float32) and the initial state dict (float32)."""

    features: torch.Tensor
    target: torch.Tensor
    init: dict[str, torch.Tensor]


@dataclass(frozen=True)
class InputFiles:
    """Where the kit wrote them."""

    data_path: Path
    init_path: Path


def param_shapes(sc: Scenario) -> dict[str, tuple[int, ...]]:
    """The README's state-dict layout of the forecaster at the scenario's sizes."""
    return {"fc1.weight": (sc.hidden_size, sc.input_dim), "fc1.bias": (sc.hidden_size,),
            "fc2.weight": (1, sc.hidden_size), "fc2.bias": (1,)}


def _linear_init(fan_in: int, shape: tuple[int, ...], gen: torch.Generator) -> torch.Tensor:
    bound = 1.0 / fan_in**0.5
    return (torch.rand(shape, generator=gen) * 2 - 1) * bound


def make_inputs(sc: Scenario) -> Inputs:
    """The scenario's table and warm start, bit for bit the same on every call."""
    with torch.random.fork_rng():
        gen = torch.Generator().manual_seed(sc.seed)
        features = torch.randn(sc.rows, sc.input_dim, generator=gen)
        weights = torch.randn(sc.input_dim, 1, generator=gen) / sc.input_dim**0.5
        if sc.fixtures == "prepare":
            target = torch.sin(features @ weights * 2.0) + 0.1 * torch.randn(sc.rows, 1, generator=gen)
            torch.manual_seed(sc.seed)
            fc1 = torch.nn.Linear(sc.input_dim, sc.hidden_size)
            fc2 = torch.nn.Linear(sc.hidden_size, 1)
            init = {"fc1.weight": fc1.weight.detach().clone(), "fc1.bias": fc1.bias.detach().clone(),
                    "fc2.weight": fc2.weight.detach().clone(), "fc2.bias": fc2.bias.detach().clone()}
        else:
            target = torch.cos(features @ weights * 3.0) + 0.5 * features[:, :1] + 0.2 * torch.randn(sc.rows, 1, generator=gen)
            shapes = param_shapes(sc)
            init = {name: _linear_init(sc.input_dim if name.startswith("fc1") else sc.hidden_size, shape, gen)
                    for name, shape in shapes.items()}
    return Inputs(features.contiguous(), target.contiguous(), init)


def write_inputs(inputs: Inputs, folder: Path) -> InputFiles:
    """Save them where the pipeline's config can point."""
    folder.mkdir(parents=True, exist_ok=True)
    files = InputFiles(folder / "train.pt", folder / "init" / "model.pt")
    files.init_path.parent.mkdir(parents=True, exist_ok=True)
    torch.save({"features": inputs.features, "target": inputs.target}, files.data_path)
    torch.save(inputs.init, files.init_path)
    return files
