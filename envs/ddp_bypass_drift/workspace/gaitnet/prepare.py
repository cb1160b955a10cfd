"""Synthetic paired-sensor windows and the initial checkpoint every run starts from.

    python -m gaitnet.prepare --config configs/ddp.yaml [key=value ...]

Writes ``data.path`` and ``model.init_checkpoint``; both depend on ``seed`` and the model
sizes only, never on the number of ranks.
"""
from __future__ import annotations

import argparse
from pathlib import Path

import torch

from gaitnet.config import load_config
from gaitnet.model import build_model

ROWS = 4096


def make_data(seed: int, input_dim: int, num_classes: int) -> dict[str, torch.Tensor]:
    """Class prototypes seen through two sensors with independent noise."""
    gen = torch.Generator().manual_seed(seed)
    protos = torch.randn(num_classes, input_dim, generator=gen)
    mix = torch.eye(input_dim) + 0.3 * torch.randn(input_dim, input_dim, generator=gen)
    y = torch.randint(0, num_classes, (ROWS,), generator=gen)
    x = protos[y] + 0.8 * torch.randn(ROWS, input_dim, generator=gen)
    x_view = protos[y] @ mix + 0.8 * torch.randn(ROWS, input_dim, generator=gen)
    return {"x": x, "x_view": x_view, "y": y}


def main(argv: list[str] | None = None) -> None:
    """Write the dataset and the initial checkpoint named in the config."""
    parser = argparse.ArgumentParser(description="write synthetic data and the initial checkpoint")
    parser.add_argument("--config", required=True)
    parser.add_argument("overrides", nargs="*")
    args = parser.parse_args(argv)
    cfg = load_config(args.config, args.overrides)
    seed = int(cfg["seed"])
    torch.manual_seed(seed)
    model = build_model(cfg["model"])
    data = make_data(seed, int(cfg["model"]["input_dim"]), int(cfg["model"]["num_classes"]))
    for key, value in (("data", cfg["data"]["path"]), ("init", cfg["model"]["init_checkpoint"])):
        Path(value).parent.mkdir(parents=True, exist_ok=True)
        torch.save(data if key == "data" else model.state_dict(), value)
    print(f"wrote {cfg['data']['path']} ({ROWS} rows) and {cfg['model']['init_checkpoint']}")


if __name__ == "__main__":
    main()
