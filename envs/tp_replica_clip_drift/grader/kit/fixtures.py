"""Starting weights and samples the grader owns, in the formats the workspace README documents.

Pure functions of the scenario: the run kit writes them for the pipeline (a consolidated
checkpoint, and ``{"x", "y"}``), the judge rebuilds them for its reference and never reads them
back from a run. The ``grader`` recipe perturbs LayerNorms and biases at 0.2 (their gradients
then matter) and regresses ``sin(x P) + x[:, :out]^2 / 2``; ``prepare`` is ``emulator.prepare``
as shipped, draw for draw, so ``seed = 1234`` reproduces the shipped files exactly.
"""
from __future__ import annotations

from pathlib import Path

import torch
from scenario import Scenario

Tensors = dict[str, torch.Tensor]


class Draws:
    """One generator and a recipe's scales; ``shipped`` divides matrices by ``sqrt(fan_in)``
    where the grader's recipe multiplies by its inverse (the two round differently)."""

    def __init__(self, seed: int, scale: float, shipped: bool) -> None:
        self.gen, self.scale, self.shipped = torch.Generator().manual_seed(seed), scale, shipped

    def normal(self, *shape: int) -> torch.Tensor:
        return torch.randn(*shape, generator=self.gen)

    def linear(self, out_features: int, in_features: int) -> tuple[torch.Tensor, torch.Tensor]:
        matrix = self.normal(out_features, in_features)
        matrix = matrix / in_features**0.5 if self.shipped else matrix * in_features**-0.5
        return matrix, self.scale * self.normal(out_features)

    def layernorm(self, width: int) -> tuple[torch.Tensor, torch.Tensor]:
        gain = 1 + self.scale * self.normal(width)
        return gain, self.scale * self.normal(width)


def starting_weights(sc: Scenario, draws: Draws) -> Tensors:
    """Every parameter of the full model, drawn in the model's order."""
    h, f = sc.hidden_size, sc.ffn_hidden_size
    layers = [("input_proj", draws.linear, (h, sc.input_dim))]
    for i in range(sc.num_layers):
        layers += [(f"blocks.{i}.ln", draws.layernorm, (h,)), (f"blocks.{i}.mlp.fc1", draws.linear, (f, h)),
                   (f"blocks.{i}.mlp.fc2", draws.linear, (h, f))]
    layers += [("final_ln", draws.layernorm, (h,)), ("head", draws.linear, (sc.output_dim, h))]
    weights: Tensors = {}
    for prefix, draw, dims in layers:
        weights[f"{prefix}.weight"], weights[f"{prefix}.bias"] = draw(*dims)
    return weights


def build(sc: Scenario) -> tuple[Tensors, torch.Tensor, torch.Tensor]:
    """(starting weights, features, targets) of ``sc.samples`` samples."""
    n, d_in, d_out = sc.samples, sc.input_dim, sc.output_dim
    if sc.fixtures == "prepare":
        draws = Draws(sc.seed, 0.1, shipped=True)
        weights = starting_weights(sc, draws)
        x = draws.normal(n, d_in)
        teacher_in = draws.normal(d_in, 4 * d_in) / d_in**0.5
        teacher_out = draws.normal(4 * d_in, d_out) / (4 * d_in) ** 0.5
        return weights, x, torch.tanh(x @ teacher_in) @ teacher_out + 0.05 * draws.normal(n, d_out)
    weights = starting_weights(sc, Draws(1_000_003 * sc.seed + 17, 0.2, shipped=False))
    data = Draws(2_000_029 * sc.seed + 5, 0.0, shipped=False)
    x = data.normal(n, d_in)
    return weights, x, torch.sin(x @ data.normal(d_in, d_out)) + 0.5 * x[:, :d_out] ** 2


def save(sc: Scenario, folder: Path) -> dict[str, Path]:
    """Write the scenario's inputs; where each went (``"init"``, ``"data"``)."""
    weights, x, y = build(sc)
    folder.mkdir(parents=True, exist_ok=True)
    paths = {"init": folder / "init.pt", "data": folder / "data.pt"}
    torch.save(weights, paths["init"])
    torch.save({"x": x, "y": y}, paths["data"])
    return paths
