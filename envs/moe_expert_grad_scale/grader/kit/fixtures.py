"""The grader's own dataset and consolidated initial weights (the README's file formats).

The recipe is the workspace's ``moetrain.prepare`` written out here, so that neither phase runs
revision code to make them: at the shipped seed and ``rows = 1024`` they are the files the
shipped prepare writes. The run kit saves them for the pipeline; the judge makes them again and
never reads them back from the run.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from scenario import Scenario


@dataclass(frozen=True)
class Inputs:
    """Rows ``x``, ``y`` and the weights ``{"dense": {name: t}, "experts": {gid: {name: t}}}``."""

    x: torch.Tensor
    y: torch.Tensor
    init: dict[str, Any]


def make_inputs(sc: Scenario) -> Inputs:
    data = torch.Generator().manual_seed(sc.seed)
    x = torch.randn(sc.rows, sc.input_dim, generator=data)
    mix = torch.randn(sc.input_dim, sc.output_dim, generator=data) / math.sqrt(sc.input_dim)
    y = torch.sin(2.0 * x @ mix) + 0.05 * torch.randn(sc.rows, sc.output_dim, generator=data)
    weights = torch.Generator().manual_seed(sc.seed + 1)

    def draw(fan_in: int, *shape: int) -> torch.Tensor:
        return (torch.rand(*shape, generator=weights) * 2 - 1) / math.sqrt(fan_in)

    h, f = sc.hidden_size, sc.ffn_hidden_size
    dense = {"input_proj.weight": draw(sc.input_dim, h, sc.input_dim), "input_proj.bias": draw(sc.input_dim, h),
             "moe.deepspeed_moe.gate.wg.weight": draw(h, sc.num_experts, h),
             "head.weight": draw(h, sc.output_dim, h), "head.bias": draw(h, sc.output_dim)}
    experts = {gid: {"0.weight": draw(h, f, h), "0.bias": draw(h, f), "2.weight": draw(f, h, f), "2.bias": draw(f, h)}
               for gid in range(sc.num_experts)}
    return Inputs(x, y, {"dense": dense, "experts": experts})


def save_inputs(inputs: Inputs, folder: Path) -> dict[str, Path]:
    """The files the overrides ``data.path`` and ``model.init_checkpoint`` point at."""
    folder.mkdir(parents=True, exist_ok=True)
    files = {"data.path": folder / "train.pt", "model.init_checkpoint": folder / "init.pt"}
    torch.save({"x": inputs.x, "y": inputs.y}, files["data.path"])
    torch.save(inputs.init, files["model.init_checkpoint"])
    return files
