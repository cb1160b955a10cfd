"""The grader's initial weights and sensor windows: pure functions of the scenario.

The run kit writes them where the pipeline's settings point (a full state dict; a dataset dict
of ``x``, ``x_view``, ``y``, as the README documents); the judge draws them again and never
reads them back. Flavour ``prepare`` is the shipped ``gaitnet.prepare`` recipe written out
(``torch.manual_seed(seed)``, the layers' default initialisation in construction order, then
the 4096-window generator), so the shipped seed trains on exactly the shipped files; flavour
``grader`` is the grader's own draw, ``dataset_rows`` windows of it.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import torch
from scenario import PREPARE_ROWS, Scenario
from torch import nn


@dataclass(frozen=True)
class Windows:
    """Initial weights and the dataset, in memory."""

    init: dict[str, torch.Tensor]
    x: torch.Tensor
    x_view: torch.Tensor
    y: torch.Tensor


def _two_sensors(gen: torch.Generator, rows: int, width: int, classes: int, noise: float) -> tuple[torch.Tensor, ...]:
    """Class prototypes seen through a wrist and an ankle sensor with independent noise."""
    prototypes = torch.randn(classes, width, generator=gen)
    mixing = torch.eye(width) + 0.3 * torch.randn(width, width, generator=gen)
    y = torch.randint(0, classes, (rows,), generator=gen)
    x = prototypes[y] + noise * torch.randn(rows, width, generator=gen)
    return x, prototypes[y] @ mixing + noise * torch.randn(rows, width, generator=gen), y


def _default_init(sc: Scenario) -> dict[str, torch.Tensor]:
    torch.manual_seed(sc.seed)
    layers = {"proj_in": nn.Linear(sc.input_dim, sc.hidden_size), "proj_out": nn.Linear(sc.hidden_size, sc.embed_dim),
              "norm": nn.LayerNorm(sc.embed_dim), "head": nn.Linear(sc.embed_dim, sc.num_classes)}
    return {f"{prefix}.{key}": value.detach().clone()
            for prefix, layer in layers.items() for key, value in layer.state_dict().items()}


def _drawn_init(sc: Scenario, gen: torch.Generator) -> dict[str, torch.Tensor]:
    init = {}
    for name, shape in sc.shapes.items():
        draw = torch.randn(shape, generator=gen)
        if name == "norm.weight":
            init[name] = 1 + 0.2 * draw
        else:
            init[name] = 0.1 * draw if name.endswith(".bias") else draw * shape[1] ** -0.5
    return init


def make_windows(sc: Scenario) -> Windows:
    if sc.fixtures == "prepare":
        gen = torch.Generator().manual_seed(sc.seed)
        return Windows(_default_init(sc), *_two_sensors(gen, PREPARE_ROWS, sc.input_dim, sc.num_classes, 0.8))
    init = _drawn_init(sc, torch.Generator().manual_seed(1_000_003 * sc.seed + 17))
    gen = torch.Generator().manual_seed(2_000_029 * sc.seed + 5)
    return Windows(init, *_two_sensors(gen, sc.dataset_rows, sc.input_dim, sc.num_classes, 1.0))


def write_windows(sc: Scenario, folder: Path) -> tuple[Path, Path]:
    """Save the inputs where the run reads them; the checkpoint's and the dataset's paths."""
    windows = make_windows(sc)
    folder.mkdir(parents=True, exist_ok=True)
    checkpoint, dataset = folder / "init.pt", folder / "data.pt"
    torch.save(windows.init, checkpoint)
    torch.save({"x": windows.x, "x_view": windows.x_view, "y": windows.y}, dataset)
    return checkpoint, dataset
