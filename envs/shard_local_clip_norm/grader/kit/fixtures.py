"""The grader's own initial weights and signals: pure functions of the scenario.

The run kit writes them for the pipeline (`--init`, `--signals`); the judge regenerates them.
"""
from __future__ import annotations

from pathlib import Path

import torch


def initial_state(sc) -> dict[str, torch.Tensor]:
    """GearNet's state dict layout (the README's model), drawn from the scenario's seed."""
    gen = torch.Generator().manual_seed(4000 + sc.seed)
    c, w, k = sc.channels, sc.width, sc.classes
    return {
        "stem.weight": torch.randn(w, c, 5, generator=gen) / (5 * c) ** 0.5,
        "stem.bias": 0.1 * torch.randn(w, generator=gen),
        "mix.weight": torch.randn(w, w, 3, generator=gen) / (3 * w) ** 0.5,
        "mix.bias": 0.1 * torch.randn(w, generator=gen),
        "head.weight": torch.randn(k, w, generator=gen) / w ** 0.5,
        "head.bias": torch.zeros(k),
    }


def signals(sc) -> dict[str, torch.Tensor]:
    """Noisy windows with random fault labels: the gradient stays large, so a small
    `max_grad_norm` binds at every step."""
    gen = torch.Generator().manual_seed(5000 + sc.seed)
    y = torch.randint(0, sc.classes, (sc.rows,), generator=gen)
    x = torch.randn(sc.rows, sc.channels, sc.window, generator=gen)
    x[:, 0, :] += 0.5 * y.float().view(-1, 1)
    return {"x": x, "y": y}


def write_inputs(sc, folder: Path) -> tuple[Path, Path]:
    """``init.pt`` and ``signals.pt`` in ``folder``: what ``--init`` and ``--data-file`` name."""
    paths = (folder / "init.pt", folder / "signals.pt")
    folder.mkdir(parents=True, exist_ok=True)
    for path, payload in zip(paths, (initial_state(sc), signals(sc)), strict=True):
        torch.save(payload, path)
    return paths
