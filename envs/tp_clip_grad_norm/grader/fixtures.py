"""Grader-owned inputs: the initial full weights and the training data.

The grader, not the workspace, decides where training starts and what it sees, so a
revision cannot move the reference by changing its own initialisation or data code.
Formats are the ones the workspace README documents (consolidated checkpoint, dataset
dict of ``x``/``y``).
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import torch
from scenario import Scenario

State = dict[str, torch.Tensor]


@dataclass(frozen=True)
class Fixtures:
    """Initial weights and data, in memory and on disk."""

    init: State
    x: torch.Tensor
    y: torch.Tensor
    init_path: Path
    data_path: Path


def _linear(gen: torch.Generator, prefix: str, fan_out: int, fan_in: int) -> State:
    return {f"{prefix}.weight": torch.randn(fan_out, fan_in, generator=gen) * fan_in**-0.5,
            f"{prefix}.bias": 0.2 * torch.randn(fan_out, generator=gen)}


def _norm(gen: torch.Generator, prefix: str, width: int) -> State:
    # Non-trivial affine parameters so LayerNorm gradients and updates are visible.
    return {f"{prefix}.weight": 1 + 0.2 * torch.randn(width, generator=gen),
            f"{prefix}.bias": 0.2 * torch.randn(width, generator=gen)}


def initial_weights(sc: Scenario) -> State:
    """Full TP=1 weights keyed by the model's parameter names."""
    gen = torch.Generator().manual_seed(1_000_003 * sc.seed + 17)
    h, f = sc.hidden_size, sc.ffn_hidden_size
    state = _linear(gen, "input_proj", h, sc.input_dim)
    for i in range(sc.num_layers):
        state |= _norm(gen, f"blocks.{i}.ln", h)
        state |= _linear(gen, f"blocks.{i}.mlp.fc1", f, h)
        state |= _linear(gen, f"blocks.{i}.mlp.fc2", h, f)
    state |= _norm(gen, "final_ln", h)
    state |= _linear(gen, "head", sc.output_dim, h)
    return state


def training_data(sc: Scenario) -> tuple[torch.Tensor, torch.Tensor]:
    """Exactly ``steps * batch_size`` rows, so no batch wraps around."""
    gen = torch.Generator().manual_seed(2_000_029 * sc.seed + 5)
    rows = sc.steps * sc.batch_size
    x = torch.randn(rows, sc.input_dim, generator=gen)
    proj = torch.randn(sc.input_dim, sc.output_dim, generator=gen)
    y = torch.sin(x @ proj) + 0.5 * x[:, : sc.output_dim] ** 2
    return x, y


def write_fixtures(sc: Scenario, directory: Path) -> Fixtures:
    """Generate the inputs and save them where the run will read them."""
    init = initial_weights(sc)
    x, y = training_data(sc)
    init_path, data_path = directory / "init.pt", directory / "data.pt"
    torch.save(init, init_path)
    torch.save({"x": x, "y": y}, data_path)
    return Fixtures(init=init, x=x, y=y, init_path=init_path, data_path=data_path)
