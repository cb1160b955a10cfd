"""Grader-owned inputs: the initial weights and the training data.

The grader, not the workspace, decides where training starts and what it sees, so a
revision cannot move the reference by changing its own initialisation or data code. Pure
functions of the scenario: the run kit writes them for the pipeline, the judge regenerates
them and never reads them back from the run. Formats are the ones the workspace README
documents (a full state dict; a dataset dict of ``x``/``x_view``/``y``).

Two flavors: ``grader`` (the default) and ``prepare``, the recipe of the shipped
``gaitnet/prepare.py`` written out here (``torch.manual_seed(seed)`` then the model's own
default initialisation, then the data generator), so a scenario can train on exactly the
shipped inputs without running the revision's own ``prepare``.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import torch
from scenario import Scenario

State = dict[str, torch.Tensor]


@dataclass(frozen=True)
class Inputs:
    """Initial weights and the dataset, in memory."""

    init: State
    x: torch.Tensor
    x_view: torch.Tensor
    y: torch.Tensor


@dataclass(frozen=True)
class InputFiles:
    """Where the run reads its inputs."""

    init_path: Path
    data_path: Path


def _grader_weights(sc: Scenario, gen: torch.Generator) -> State:
    state: State = {}
    for name, shape in sc.shapes.items():
        if name == "norm.weight":
            state[name] = 1 + 0.2 * torch.randn(shape, generator=gen)
        elif name.endswith(".bias"):
            state[name] = 0.1 * torch.randn(shape, generator=gen)
        else:
            state[name] = torch.randn(shape, generator=gen) * shape[1] ** -0.5
    return state


def _data(gen: torch.Generator, rows: int, d: int, classes: int, noise: float) -> tuple[torch.Tensor, ...]:
    """Class prototypes seen through two sensors with independent noise (the shipped recipe)."""
    protos = torch.randn(classes, d, generator=gen)
    mix = torch.eye(d) + 0.3 * torch.randn(d, d, generator=gen)
    y = torch.randint(0, classes, (rows,), generator=gen)
    x = protos[y] + noise * torch.randn(rows, d, generator=gen)
    x_view = protos[y] @ mix + noise * torch.randn(rows, d, generator=gen)
    return x, x_view, y


def _prepare_weights(sc: Scenario) -> State:
    """``torch.manual_seed(seed)`` then ``nn.Linear``/``nn.LayerNorm``'s default init, in the
    model's construction order (proj_in, proj_out, norm, head)."""
    torch.manual_seed(sc.seed)
    layers = [torch.nn.Linear(sc.input_dim, sc.hidden_size), torch.nn.Linear(sc.hidden_size, sc.embed_dim),
              torch.nn.LayerNorm(sc.embed_dim), torch.nn.Linear(sc.embed_dim, sc.num_classes)]
    state: State = {}
    for prefix, layer in zip(("proj_in", "proj_out", "norm", "head"), layers, strict=True):
        state |= {f"{prefix}.{k}": v.detach().clone() for k, v in layer.state_dict().items()}
    return state


def make_inputs(sc: Scenario) -> Inputs:
    """Exactly ``steps * global_batch_size`` rows in the grader flavor, so no batch wraps
    around; the shipped 4096 rows in the ``prepare`` flavor."""
    if sc.fixtures == "prepare":
        init = _prepare_weights(sc)
        x, x_view, y = _data(torch.Generator().manual_seed(sc.seed), 4096, sc.input_dim, sc.num_classes, 0.8)
        return Inputs(init=init, x=x, x_view=x_view, y=y)
    init = _grader_weights(sc, torch.Generator().manual_seed(1_000_003 * sc.seed + 17))
    gen = torch.Generator().manual_seed(2_000_029 * sc.seed + 5)
    x, x_view, y = _data(gen, sc.rows, sc.input_dim, sc.num_classes, 1.0)
    return Inputs(init=init, x=x, x_view=x_view, y=y)


def write_inputs(inputs: Inputs, directory: Path) -> InputFiles:
    """Save the inputs in the README formats where the run will read them."""
    directory.mkdir(parents=True, exist_ok=True)
    files = InputFiles(init_path=directory / "init.pt", data_path=directory / "data.pt")
    torch.save(inputs.init, files.init_path)
    torch.save({"x": inputs.x, "x_view": inputs.x_view, "y": inputs.y}, files.data_path)
    return files
