"""The grader's own starting weights and training table for a scenario.

The grader, not the revision, decides where training starts and what it reads: the run kit
writes these files in the README's formats (a consolidated checkpoint; ``{"x", "y"}``) and the
judge regenerates them for its reference instead of reading anything back. Two recipes:

* ``grader``: weights from one generator (matrices ``N(0,1) * fan_in**-0.5``, biases and
  LayerNorm offsets at 0.2 scale, large enough that LayerNorm gradients show), a table from
  another (targets ``sin(x @ P) + x[:, :out]**2 / 2``);
* ``prepare``: ``surrogate.prepare`` as shipped, bit for bit (one generator seeded with
  ``seed``: weights at 0.1 scale divided by ``sqrt(fan_in)``, then rows, a tanh teacher, noise).
"""
from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

import torch
from scenario import Scenario

State = dict[str, torch.Tensor]


class Inputs(NamedTuple):
    init: State
    x: torch.Tensor
    y: torch.Tensor


class Files(NamedTuple):
    init: Path
    data: Path


def _stems(sc: Scenario) -> list[tuple[str, tuple[int, int] | None]]:
    """Each layer in the model's parameter order with its weight matrix (None: a LayerNorm)."""
    h, f = sc.hidden_size, sc.ffn_hidden_size
    stems: list[tuple[str, tuple[int, int] | None]] = [("input_proj", (h, sc.input_dim))]
    for i in range(sc.num_layers):
        stems += [(f"blocks.{i}.ln", None), (f"blocks.{i}.mlp.fc1", (f, h)), (f"blocks.{i}.mlp.fc2", (h, f))]
    return [*stems, ("final_ln", None), ("head", (sc.output_dim, h))]


def _weights(sc: Scenario, gen: torch.Generator, spread: float, shipped: bool) -> State:
    state: State = {}
    for stem, matrix in _stems(sc):
        if matrix is None:
            state[f"{stem}.weight"] = 1 + spread * torch.randn(sc.hidden_size, generator=gen)
            state[f"{stem}.bias"] = spread * torch.randn(sc.hidden_size, generator=gen)
            continue
        raw = torch.randn(*matrix, generator=gen)
        # the shipped recipe divides by sqrt(fan_in); the grader's multiplies (another rounding)
        state[f"{stem}.weight"] = raw / matrix[1] ** 0.5 if shipped else raw * matrix[1] ** -0.5
        state[f"{stem}.bias"] = spread * torch.randn(matrix[0], generator=gen)
    return state


def make_inputs(sc: Scenario) -> Inputs:
    """``sc.dataset_rows`` rows and the starting weights of the scenario's recipe."""
    rows, d_in, d_out = sc.dataset_rows, sc.input_dim, sc.output_dim
    if sc.fixtures == "prepare":
        gen = torch.Generator().manual_seed(sc.seed)
        init = _weights(sc, gen, 0.1, shipped=True)
        x = torch.randn(rows, d_in, generator=gen)
        w_in = torch.randn(d_in, 4 * d_in, generator=gen) / d_in**0.5
        w_out = torch.randn(4 * d_in, d_out, generator=gen) / (4 * d_in) ** 0.5
        return Inputs(init, x, torch.tanh(x @ w_in) @ w_out + 0.05 * torch.randn(rows, d_out, generator=gen))
    init = _weights(sc, torch.Generator().manual_seed(1_000_003 * sc.seed + 17), 0.2, shipped=False)
    gen = torch.Generator().manual_seed(2_000_029 * sc.seed + 5)
    x = torch.randn(rows, d_in, generator=gen)
    projection = torch.randn(d_in, d_out, generator=gen)
    return Inputs(init, x, torch.sin(x @ projection) + 0.5 * x[:, :d_out] ** 2)


def write_inputs(sc: Scenario, folder: Path) -> Files:
    """The scenario's inputs saved where the run reads them."""
    inputs = make_inputs(sc)
    folder.mkdir(parents=True, exist_ok=True)
    files = Files(folder / "init.pt", folder / "data.pt")
    torch.save(inputs.init, files.init)
    torch.save({"x": inputs.x, "y": inputs.y}, files.data)
    return files
