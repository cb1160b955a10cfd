"""The grader's inputs: the dataset and consolidated initial weights of one scenario.

The same recipe as the workspace's ``moetrain.prepare`` (its README documents both file
formats), written here so that neither the run kit nor the judge imports revision code. The
judge regenerates them itself; nothing is read back from the run.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from scenario import Scenario

ROWS = 1024


@dataclass(frozen=True)
class Inputs:
    """Dataset rows and initial weights (``{"dense": {...}, "experts": {id: {...}}}``)."""

    x: torch.Tensor
    y: torch.Tensor
    init: dict[str, Any]


@dataclass(frozen=True)
class InputFiles:
    """Where the run kit wrote the inputs for the pipeline."""

    data_path: Path
    init_path: Path


def make_inputs(sc: Scenario) -> Inputs:
    """Dataset and initial weights for ``sc.seed`` at the scenario's sizes."""
    gen = torch.Generator().manual_seed(sc.seed)
    x = torch.randn(ROWS, sc.input_dim, generator=gen)
    mix = torch.randn(sc.input_dim, sc.output_dim, generator=gen) / math.sqrt(sc.input_dim)
    y = torch.sin(2.0 * x @ mix) + 0.05 * torch.randn(ROWS, sc.output_dim, generator=gen)
    gen = torch.Generator().manual_seed(sc.seed + 1)

    def uniform(fan_in: int, *shape: int) -> torch.Tensor:
        return (torch.rand(*shape, generator=gen) * 2 - 1) / math.sqrt(fan_in)

    d_in, hid, ffn, d_out, n_exp = sc.input_dim, sc.hidden_size, sc.ffn_hidden_size, sc.output_dim, sc.num_experts
    dense = {
        "input_proj.weight": uniform(d_in, hid, d_in),
        "input_proj.bias": uniform(d_in, hid),
        "moe.deepspeed_moe.gate.wg.weight": uniform(hid, n_exp, hid),
        "head.weight": uniform(hid, d_out, hid),
        "head.bias": uniform(hid, d_out),
    }
    experts = {
        gid: {"0.weight": uniform(hid, ffn, hid), "0.bias": uniform(hid, ffn),
              "2.weight": uniform(ffn, hid, ffn), "2.bias": uniform(ffn, hid)}
        for gid in range(n_exp)
    }
    return Inputs(x, y, {"dense": dense, "experts": experts})


def write_inputs(inputs: Inputs, folder: Path) -> InputFiles:
    """Save the inputs in the README's formats."""
    folder.mkdir(parents=True, exist_ok=True)
    files = InputFiles(folder / "train.pt", folder / "init.pt")
    torch.save({"x": inputs.x, "y": inputs.y}, files.data_path)
    torch.save(inputs.init, files.init_path)
    return files
