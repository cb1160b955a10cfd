"""Initial weights and training data of a scenario, generated from its seed.

Pure functions of the scenario (shared by the run kit, which writes them for the pipeline, and
the judge, which regenerates them rather than reading anything back). Two flavours:

* ``prepare``: the workspace's own ``surrogate.prepare`` recipe, re-implemented here (PyTorch's
  default ``nn.Linear`` initialisation after ``torch.manual_seed(seed)``; a tanh teacher drawn
  from ``seed + 1``), so the shipped seed gives the shipped files;
* ``grader``: the grader's own draw (scaled normal weights, small biases; a sine-of-projection
  target), so a revision cannot tune itself to the shipped files.

With ``shards = "identical"`` every rank's shard of a global batch is a copy of rank 0's: the
global-batch mean gradient then equals each rank's own, the healthy control of this case.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import torch
from torch import nn

from scenario import Scenario


@dataclass(frozen=True)
class Inputs:
    """Initial fp32 weights (README names) and the dataset rows in file order."""

    init: dict[str, torch.Tensor]
    x: torch.Tensor
    y: torch.Tensor


@dataclass(frozen=True)
class InputFiles:
    """Where the run kit wrote the inputs."""

    init_path: Path
    data_path: Path


def _prepare_weights(sc: Scenario) -> dict[str, torch.Tensor]:
    torch.manual_seed(sc.seed)
    dims = [sc.input_dim] + [sc.hidden_size] * sc.num_layers + [sc.output_dim]
    layers: list[nn.Module] = []
    for i in range(len(dims) - 1):
        layers.append(nn.Linear(dims[i], dims[i + 1]))
        if i < len(dims) - 2:
            layers.append(nn.Tanh())
    net = nn.Sequential(*layers)
    return {f"net.{k}": v.detach().clone() for k, v in net.state_dict().items()}


def _grader_weights(sc: Scenario, gen: torch.Generator) -> dict[str, torch.Tensor]:
    out = {}
    for name, shape in sc.shapes:
        if name.endswith(".weight"):
            out[name] = torch.randn(shape, generator=gen) / shape[1] ** 0.5
        else:
            out[name] = 0.1 * torch.randn(shape, generator=gen)
    return out


def _prepare_data(sc: Scenario, rows: int) -> tuple[torch.Tensor, torch.Tensor]:
    gen = torch.Generator().manual_seed(sc.seed + 1)
    d_in, d_out = sc.input_dim, sc.output_dim
    x = torch.randn(rows, d_in, generator=gen)
    w1 = torch.randn(d_in, 4 * d_in, generator=gen) / d_in**0.5
    w2 = torch.randn(4 * d_in, d_out, generator=gen) / (4 * d_in) ** 0.5
    y = torch.tanh(x @ w1) @ w2 + 0.05 * torch.randn(rows, d_out, generator=gen)
    return x, y


def _grader_data(sc: Scenario, rows: int, gen: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    x = torch.randn(rows, sc.input_dim, generator=gen)
    proj = torch.randn(sc.input_dim, sc.output_dim, generator=gen) / sc.input_dim**0.5
    y = torch.sin(2.0 * x @ proj) + 0.3 * torch.randn(rows, sc.output_dim, generator=gen)
    return x, y


def make_inputs(sc: Scenario) -> Inputs:
    """The scenario's initial weights and ``steps`` global batches of data."""
    rows = sc.global_batch * sc.steps
    if sc.fixtures == "prepare":
        init = _prepare_weights(sc)
        x, y = _prepare_data(sc, rows)
    else:
        gen = torch.Generator().manual_seed(sc.seed)
        init = _grader_weights(sc, gen)
        x, y = _grader_data(sc, rows, gen)
    if sc.shards == "identical":
        shard = sc.global_batch // sc.devices
        x = x.view(sc.steps, sc.devices, shard, -1)[:, :1].expand(-1, sc.devices, -1, -1).reshape(rows, -1)
        y = y.view(sc.steps, sc.devices, shard, -1)[:, :1].expand(-1, sc.devices, -1, -1).reshape(rows, -1)
    return Inputs(init=init, x=x.contiguous(), y=y.contiguous())


def write_inputs(inputs: Inputs, folder: Path) -> InputFiles:
    """Save the inputs where the pipeline's config will point."""
    folder.mkdir(parents=True, exist_ok=True)
    files = InputFiles(init_path=folder / "init.pt", data_path=folder / "train.pt")
    torch.save(inputs.init, files.init_path)
    torch.save({"x": inputs.x, "y": inputs.y}, files.data_path)
    return files
