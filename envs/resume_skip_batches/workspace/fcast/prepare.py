"""Write the synthetic training table and the warm-start checkpoint a config points at.

    python -m fcast.prepare --config configs/base.yaml [key=value ...]

Rows: standard-normal features, a smooth nonlinear target plus noise. The warm start is a
freshly initialised Forecaster drawn from ``seed``.
"""
from __future__ import annotations

import argparse
from pathlib import Path

import torch

from fcast.config import load_config
from fcast.model import Forecaster


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--config", required=True)
    parser.add_argument("overrides", nargs="*")
    args = parser.parse_args(argv)
    cfg = load_config(args.config, args.overrides)
    gen = torch.Generator().manual_seed(int(cfg["seed"]))
    rows, dim = int(cfg["data"]["rows"]), int(cfg["model"]["input_dim"])
    features = torch.randn(rows, dim, generator=gen)
    weights = torch.randn(dim, 1, generator=gen) / dim**0.5
    target = torch.sin(features @ weights * 2.0) + 0.1 * torch.randn(rows, 1, generator=gen)
    data_path = Path(cfg["data"]["path"])
    data_path.parent.mkdir(parents=True, exist_ok=True)
    torch.save({"features": features, "target": target}, data_path)
    torch.manual_seed(int(cfg["seed"]))
    model = Forecaster(dim, int(cfg["model"]["hidden_size"]))
    init_path = Path(cfg["model"]["init_checkpoint"])
    init_path.parent.mkdir(parents=True, exist_ok=True)
    torch.save(model.state_dict(), init_path)
    print(f"wrote {data_path} ({rows} rows) and {init_path}")


if __name__ == "__main__":
    main()
