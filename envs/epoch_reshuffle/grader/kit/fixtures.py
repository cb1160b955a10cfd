"""The window table and starting weights a scenario trains from, owned by the grader.

Pure functions of the scenario: the run kit writes them where the config points, the judge draws
them again and never reads them back from the run. Every window is distinct (continuous noise),
so the judge can name each row a rank trained on by its bytes.
"""

from __future__ import annotations

from pathlib import Path

import torch
from scenario import Scenario


def layout(sc: Scenario) -> dict[str, tuple[int, ...]]:
    """The README's state-dict layout of GestureNet."""
    return {"fc1.weight": (sc.hidden, sc.features), "fc1.bias": (sc.hidden,),
            "fc2.weight": (sc.classes, sc.hidden), "fc2.bias": (sc.classes,)}  # fmt: skip


def draw(sc: Scenario) -> tuple[torch.Tensor, torch.Tensor, dict[str, torch.Tensor]]:
    """``(windows float32 [rows, features], gesture int64 [rows], init state dict)``."""
    gen = torch.Generator().manual_seed(sc.table_seed)
    centres = 0.7 * torch.randn(sc.classes, sc.features, generator=gen)
    gesture = torch.randint(0, sc.classes, (sc.rows,), generator=gen)
    windows = (centres[gesture] + torch.randn(sc.rows, sc.features, generator=gen)).contiguous()
    init = {}
    for name, shape in layout(sc).items():
        fan_in = sc.features if name.startswith("fc1") else sc.hidden
        init[name] = (torch.rand(shape, generator=gen) * 2 - 1) / fan_in**0.5
    return windows, gesture, init


def write(sc: Scenario, folder: Path) -> tuple[Path, Path]:
    """``(table, init)`` in the README's formats."""
    windows, gesture, init = draw(sc)
    folder.mkdir(parents=True, exist_ok=True)
    torch.save({"windows": windows, "gesture": gesture}, folder / "windows.pt")
    torch.save(init, folder / "init.pt")
    return folder / "windows.pt", folder / "init.pt"
