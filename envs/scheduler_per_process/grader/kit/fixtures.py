"""Grader-owned inputs: the initial weights and the training data.

The grader, not the workspace, decides where training starts and what it sees, so a
revision cannot move the reference by changing its own initialisation or data code. Pure
functions of the scenario: the run kit writes them for the pipeline, the judge regenerates
them for its reference and never reads them back from the run. Formats are the ones the
workspace README documents (a state dict; a ``{"x", "y"}`` tensor file).

Two flavors: ``grader`` (the default: a sine-and-square target) and ``prepare``, the recipe
of the shipped ``demandnet/prepare.py`` written out here, so a scenario can train on exactly
the shipped initial weights and data without running the revision's own ``prepare``.
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
    y: torch.Tensor


@dataclass(frozen=True)
class InputFiles:
    """Where the run reads its inputs."""

    init_path: Path
    data_path: Path


def _weights(sc: Scenario, gen: torch.Generator, divide: bool) -> State:
    """Normal matrices scaled by ``fan_in ** -0.5`` and 0.1-sized biases, in the model's order.
    ``divide`` picks ``w / fan_in**0.5`` over ``w * fan_in**-0.5`` (they round differently)."""
    d, h, o = sc.input_dim, sc.hidden_size, sc.output_dim
    state: State = {}
    for name, rows, cols in (("fc1", h, d), ("fc2", h, h), ("head", o, h)):
        w = torch.randn(rows, cols, generator=gen)
        state[f"{name}.weight"] = w / cols**0.5 if divide else w * cols**-0.5
        state[f"{name}.bias"] = 0.1 * torch.randn(rows, generator=gen)
    return state


def _grader_inputs(sc: Scenario) -> Inputs:
    """The grader's generator: sine-of-projection targets plus a square term."""
    init = _weights(sc, torch.Generator().manual_seed(1_000_003 * sc.seed + 29), divide=False)
    gen = torch.Generator().manual_seed(2_000_029 * sc.seed + 13)
    x = torch.randn(sc.rows, sc.input_dim, generator=gen)
    proj = torch.randn(sc.input_dim, sc.output_dim, generator=gen)
    y = torch.sin(x @ proj) + 0.5 * x[:, : sc.output_dim] ** 2
    return Inputs(init=init, x=x, y=y)


def _prepare_inputs(sc: Scenario) -> Inputs:
    """The shipped ``demandnet.prepare`` recipe: one generator seeded with ``seed``, weights
    first, then features and a tanh teacher with a little noise."""
    gen = torch.Generator().manual_seed(sc.seed)
    init = _weights(sc, gen, divide=True)
    d_in, d_out = sc.input_dim, sc.output_dim
    x = torch.randn(sc.rows, d_in, generator=gen)
    w1 = torch.randn(d_in, 4 * d_in, generator=gen) / d_in**0.5
    w2 = torch.randn(4 * d_in, d_out, generator=gen) / (4 * d_in) ** 0.5
    y = torch.tanh(x @ w1) @ w2 + 0.05 * torch.randn(sc.rows, d_out, generator=gen)
    return Inputs(init=init, x=x, y=y)


def make_inputs(sc: Scenario) -> Inputs:
    """Exactly ``sc.rows`` rows: whole batches on every process."""
    return _prepare_inputs(sc) if sc.fixtures == "prepare" else _grader_inputs(sc)


def write_inputs(inputs: Inputs, directory: Path) -> InputFiles:
    """Save the inputs in the README formats where the run will read them."""
    directory.mkdir(parents=True, exist_ok=True)
    files = InputFiles(init_path=directory / "init.pt", data_path=directory / "data.pt")
    torch.save(inputs.init, files.init_path)
    torch.save({"x": inputs.x, "y": inputs.y}, files.data_path)
    return files
