"""Write a synthetic dataset and a consolidated initial checkpoint for a config.

    python -m emulator.prepare --config configs/tp2.yaml [key=value ...]

Targets come from a random "teacher" network with a set seed, so the regression task is learnable.
Both files depend only on ``seed`` and the ``model``/``data`` sections, never on the
tensor-parallel size, which is what lets runs at different sizes be compared.
"""
from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import torch

from emulator import layout
from emulator.config import load_config


def init_weights(model_cfg: dict[str, Any], gen: torch.Generator) -> dict[str, torch.Tensor]:
    """Full (TP=1) initial weights: scaled normal matrices, small random biases and norms."""
    d_in, h, f = model_cfg["input_dim"], model_cfg["hidden_size"], model_cfg["ffn_hidden_size"]
    d_out = model_cfg["output_dim"]

    def linear(stem: str, fan_out: int, fan_in: int) -> dict[str, torch.Tensor]:
        return {f"{stem}.weight": torch.randn(fan_out, fan_in, generator=gen) / fan_in**0.5,
                f"{stem}.bias": 0.1 * torch.randn(fan_out, generator=gen)}

    def norm(stem: str) -> dict[str, torch.Tensor]:
        return {f"{stem}.weight": 1 + 0.1 * torch.randn(h, generator=gen),
                f"{stem}.bias": 0.1 * torch.randn(h, generator=gen)}

    state = linear("input_proj", h, d_in)
    for i in range(model_cfg["num_layers"]):
        state |= norm(f"blocks.{i}.ln")
        state |= linear(f"blocks.{i}.mlp.fc1", f, h)
        state |= linear(f"blocks.{i}.mlp.fc2", h, f)
    state |= norm("final_ln")
    state |= linear("head", d_out, h)
    return state


def synthetic_data(model_cfg: dict[str, Any], rows: int, gen: torch.Generator) -> dict[str, torch.Tensor]:
    """Features ~ N(0, 1); targets from a random two-layer tanh teacher plus a little noise."""
    d_in, d_out = model_cfg["input_dim"], model_cfg["output_dim"]
    x = torch.randn(rows, d_in, generator=gen)
    w1 = torch.randn(d_in, 4 * d_in, generator=gen) / d_in**0.5
    w2 = torch.randn(4 * d_in, d_out, generator=gen) / (4 * d_in) ** 0.5
    y = torch.tanh(x @ w1) @ w2 + 0.05 * torch.randn(rows, d_out, generator=gen)
    return {"x": x, "y": y}


def main(argv: list[str] | None = None) -> None:
    """Write ``data.path`` and ``model.init_checkpoint`` for the given config."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", required=True)
    parser.add_argument("overrides", nargs="*")
    args = parser.parse_args(argv)
    cfg = load_config(args.config, args.overrides)
    gen = torch.Generator().manual_seed(cfg["seed"])
    weights = init_weights(cfg["model"], gen)
    rows = cfg["data"]["batch_size"] * cfg["train"]["steps"]
    data = synthetic_data(cfg["model"], rows, gen)
    for path, blob in ((cfg["model"]["init_checkpoint"], weights), (cfg["data"]["path"], data)):
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        torch.save(blob, path)
        print(f"wrote {path}")
    sharded = sorted(n for n in weights if layout.partition_dim(n) is not None)
    print(f"{len(weights)} tensors, {len(sharded)} split across tensor-parallel ranks")


if __name__ == "__main__":
    main()
