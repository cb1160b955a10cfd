"""Write a synthetic dataset and an initial checkpoint for a config.

    python -m surrogate.prepare --config configs/dp2.yaml [key=value ...]

Targets come from a random "teacher" network with a set seed, so the regression task is
learnable. Both files depend only on ``seed`` and the ``model``/``data``/``train`` sections'
sizes, never on how a global batch is split into ranks and micro-batches, which is what lets
equivalent configurations be compared.
"""
from __future__ import annotations

import argparse
from pathlib import Path

import torch

from surrogate.config import load_config
from surrogate.model import build_model


def main(argv: list[str] | None = None) -> None:
    """Write ``data.path`` and ``model.init_checkpoint`` for the given config."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", required=True)
    parser.add_argument("overrides", nargs="*")
    args = parser.parse_args(argv)
    cfg = load_config(args.config, args.overrides)
    torch.manual_seed(cfg["seed"])
    weights = build_model(cfg["model"]).state_dict()
    gen = torch.Generator().manual_seed(cfg["seed"] + 1)
    d_in, d_out = cfg["model"]["input_dim"], cfg["model"]["output_dim"]
    data_cfg = cfg["data"]
    rows = (data_cfg["micro_batch_size"] * data_cfg["gradient_accumulation_steps"]
            * cfg["parallel"]["data_parallel_size"] * cfg["train"]["steps"])
    x = torch.randn(rows, d_in, generator=gen)
    w1 = torch.randn(d_in, 4 * d_in, generator=gen) / d_in**0.5
    w2 = torch.randn(4 * d_in, d_out, generator=gen) / (4 * d_in) ** 0.5
    y = torch.tanh(x @ w1) @ w2 + 0.05 * torch.randn(rows, d_out, generator=gen)
    for path, blob in ((cfg["model"]["init_checkpoint"], weights), (data_cfg["path"], {"x": x, "y": y})):
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        torch.save(blob, path)
        print(f"wrote {path}")


if __name__ == "__main__":
    main()
