"""The table and the warm start a scenario trains from, owned by the grader.

The run kit writes them for the pipeline (README formats: ``{"features", "target"}`` and a
``Forecaster`` state dict); the judge draws them again itself and never reads them back from
the run. Flavor ``prepare`` is the shipped ``fcast.prepare`` recipe written out here (the shipped
seed gives the shipped files); flavor ``grader`` draws another target and warm start.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import torch
from scenario import Scenario


@dataclass(frozen=True)
class Inputs:
    features: torch.Tensor
    target: torch.Tensor
    init: dict[str, torch.Tensor]


def shapes(sc: Scenario) -> dict[str, tuple[int, ...]]:
    """The README's state-dict layout of the forecaster."""
    h = sc.hidden_size
    return {"fc1.weight": (h, sc.input_dim), "fc1.bias": (h,), "fc2.weight": (1, h), "fc2.bias": (1,)}


def make_inputs(sc: Scenario) -> Inputs:
    """Bit for bit the same on every call (torch's global generator is left as it was)."""
    with torch.random.fork_rng():
        gen = torch.Generator().manual_seed(sc.seed)
        features = torch.randn(sc.rows, sc.input_dim, generator=gen)
        weights = torch.randn(sc.input_dim, 1, generator=gen) / sc.input_dim**0.5
        if sc.fixtures == "prepare":
            target = torch.sin(features @ weights * 2.0) + 0.1 * torch.randn(sc.rows, 1, generator=gen)
            torch.manual_seed(sc.seed)  # fcast.prepare draws Forecaster's default init from here
            fc1, fc2 = torch.nn.Linear(sc.input_dim, sc.hidden_size), torch.nn.Linear(sc.hidden_size, 1)
            init = {f"{name}.{p}": getattr(layer, p).detach().clone()
                    for name, layer in (("fc1", fc1), ("fc2", fc2)) for p in ("weight", "bias")}  # fmt: skip
        else:
            target = (torch.cos(features @ weights * 3.0) + 0.5 * features[:, :1]
                      + 0.2 * torch.randn(sc.rows, 1, generator=gen))  # fmt: skip
            init = {}
            for name, shape in shapes(sc).items():
                bound = 1.0 / (sc.input_dim if name.startswith("fc1") else sc.hidden_size) ** 0.5
                init[name] = (torch.rand(shape, generator=gen) * 2 - 1) * bound
    return Inputs(features.contiguous(), target.contiguous(), init)


def write_inputs(inputs: Inputs, folder: Path) -> tuple[Path, Path]:
    """``(table, warm start)`` written where the config can point."""
    (folder / "init").mkdir(parents=True, exist_ok=True)
    table, init = folder / "train.pt", folder / "init" / "model.pt"
    torch.save({"features": inputs.features, "target": inputs.target}, table)
    torch.save(inputs.init, init)
    return table, init
