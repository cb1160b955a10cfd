"""Write a synthetic training set and the initial weights for a config.

    python -m demandnet.prepare --config configs/train.yaml [key=value ...]

Targets come from a random "teacher" network with a set seed, so the task is learnable. Rows
are written in random order; training reads them in file order. Both files depend only on
``seed`` and the ``model``/``data`` sections, never on the number of processes.
"""
from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import torch

from demandnet.config import load_config


def init_weights(model_cfg: dict[str, Any], gen: torch.Generator) -> dict[str, torch.Tensor]:
    """``fan_in ** -0.5``-scaled normal matrices and small random biases."""
    d_in, h, d_out = model_cfg["input_dim"], model_cfg["hidden_size"], model_cfg["output_dim"]
    state: dict[str, torch.Tensor] = {}
    for name, fan_out, fan_in in (("fc1", h, d_in), ("fc2", h, h), ("head", d_out, h)):
        state[f"{name}.weight"] = torch.randn(fan_out, fan_in, generator=gen) / fan_in**0.5
        state[f"{name}.bias"] = 0.1 * torch.randn(fan_out, generator=gen)
    return state


def synthetic_data(model_cfg: dict[str, Any], rows: int, gen: torch.Generator) -> dict[str, torch.Tensor]:
    """Features ~ N(0, 1); targets from a random tanh teacher plus a little noise."""
    d_in, d_out = model_cfg["input_dim"], model_cfg["output_dim"]
    x = torch.randn(rows, d_in, generator=gen)
    w1 = torch.randn(d_in, 4 * d_in, generator=gen) / d_in**0.5
    w2 = torch.randn(4 * d_in, d_out, generator=gen) / (4 * d_in) ** 0.5
    y = torch.tanh(x @ w1) @ w2 + 0.05 * torch.randn(rows, d_out, generator=gen)
    return {"x": x, "y": y}


def main(argv: list[str] | None = None) -> None:
    """Write ``data.path`` and ``model.init_checkpoint`` for the given config."""
    parser = argparse.ArgumentParser(description="write demandnet's synthetic data and initial weights")
    parser.add_argument("--config", required=True)
    parser.add_argument("overrides", nargs="*")
    args = parser.parse_args(argv)
    cfg = load_config(args.config, args.overrides)
    gen = torch.Generator().manual_seed(cfg["seed"])
    weights = init_weights(cfg["model"], gen)
    data = synthetic_data(cfg["model"], int(cfg["data"]["rows"]), gen)
    for path, blob in ((cfg["model"]["init_checkpoint"], weights), (cfg["data"]["path"], data)):
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        torch.save(blob, path)
        print(f"wrote {path}")


if __name__ == "__main__":
    main()
