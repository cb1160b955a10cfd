"""Synthetic data and the consolidated initial checkpoint (they depend on ``seed`` only).

    python -m moetrain.prepare --config configs/ep2.yaml [key=value ...]
"""
from __future__ import annotations

import argparse
import math
from pathlib import Path
from typing import Any

import torch

from moetrain.config import Settings, read

ROWS = 1024


def make_dataset(seed: int, input_dim: int, output_dim: int, rows: int = ROWS) -> dict[str, torch.Tensor]:
    """A smooth nonlinear target with a little noise."""
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(rows, input_dim, generator=gen)
    mix = torch.randn(input_dim, output_dim, generator=gen) / math.sqrt(input_dim)
    y = torch.sin(2.0 * x @ mix) + 0.05 * torch.randn(rows, output_dim, generator=gen)
    return {"x": x, "y": y}


def make_init(seed: int, settings: Settings) -> dict[str, Any]:
    """Initial weights: uniform(±1/sqrt(fan_in)) in a fixed order, every expert by global id."""
    gen = torch.Generator().manual_seed(seed + 1)

    def uniform(fan_in: int, *shape: int) -> torch.Tensor:
        return (torch.rand(*shape, generator=gen) * 2 - 1) / math.sqrt(fan_in)

    d_in, hid = settings["model.input_dim"], settings["model.hidden_size"]
    ffn, d_out, n_exp = settings["model.ffn_hidden_size"], settings["model.output_dim"], settings["model.num_experts"]
    dense = {
        "input_proj.weight": uniform(d_in, hid, d_in),
        "input_proj.bias": uniform(d_in, hid),
        "moe.deepspeed_moe.gate.wg.weight": uniform(hid, n_exp, hid),
        "head.weight": uniform(hid, d_out, hid),
        "head.bias": uniform(hid, d_out),
    }
    experts = {
        gid: {"0.weight": uniform(hid, ffn, hid), "0.bias": uniform(hid, ffn),
              "2.weight": uniform(ffn, hid, ffn), "2.bias": uniform(ffn, hid)}
        for gid in range(n_exp)
    }
    return {"dense": dense, "experts": experts}


def write(obj: Any, path: str) -> None:
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    torch.save(obj, target)
    print(f"wrote {target}")


if __name__ == "__main__":
    cli = argparse.ArgumentParser(description="write synthetic data and initial weights for a config's seed")
    cli.add_argument("--config", required=True)
    cli.add_argument("overrides", nargs="*", help="dotted.key=value")
    opts = cli.parse_args()
    settings = read(opts.config, opts.overrides)
    data = make_dataset(settings["seed"], settings["model.input_dim"], settings["model.output_dim"])
    write(data, settings["data.path"])
    write(make_init(settings["seed"], settings), settings["model.init_checkpoint"])
