"""Synthetic samples and the consolidated initial checkpoint for a run file.

    python -m emulator.prepare --config configs/tp2.yaml [key=value ...]

Everything is drawn from one generator seeded with ``seed``: first the weights, parameter by
parameter in the model's order (weight matrices ``N(0, 1) / sqrt(fan_in)``, biases
``0.1 N(0, 1)``, LayerNorm weights ``1 + 0.1 N(0, 1)``), then ``train_iters x micro_batch_size``
feature rows ``N(0, 1)``, then a random two-layer tanh teacher (``W1 / sqrt(d_in)``,
``W2 / sqrt(4 d_in)``) and the noise (``0.05 N(0, 1)``) added to its outputs. The tensor-parallel
size is not an input: every size trains from the same files.
"""
from __future__ import annotations

import argparse
from pathlib import Path

import torch

from emulator.arguments import parse_args
from emulator.partition import is_replicated


def consolidated_init(args: argparse.Namespace, gen: torch.Generator) -> dict[str, torch.Tensor]:
    h, f = args.hidden_size, args.ffn_hidden_size
    state: dict[str, torch.Tensor] = {}

    def linear(name: str, fan_in: int, fan_out: int) -> None:
        state[f"{name}.weight"] = torch.randn(fan_out, fan_in, generator=gen) / fan_in**0.5
        state[f"{name}.bias"] = 0.1 * torch.randn(fan_out, generator=gen)

    def layernorm(name: str) -> None:
        state[f"{name}.weight"] = 1 + 0.1 * torch.randn(h, generator=gen)
        state[f"{name}.bias"] = 0.1 * torch.randn(h, generator=gen)

    linear("input_proj", args.input_dim, h)
    for layer in range(args.num_layers):
        layernorm(f"blocks.{layer}.ln")
        linear(f"blocks.{layer}.mlp.fc1", h, f)
        linear(f"blocks.{layer}.mlp.fc2", f, h)
    layernorm("final_ln")
    linear("head", h, args.output_dim)
    return state


def synthetic_samples(args: argparse.Namespace, gen: torch.Generator) -> dict[str, torch.Tensor]:
    count, width = args.train_iters * args.micro_batch_size, 4 * args.input_dim
    x = torch.randn(count, args.input_dim, generator=gen)
    w1 = torch.randn(args.input_dim, width, generator=gen).div_(args.input_dim**0.5)
    w2 = torch.randn(width, args.output_dim, generator=gen).div_(width**0.5)
    noise = torch.randn(count, args.output_dim, generator=gen).mul_(0.05)
    return {"x": x, "y": torch.tanh(x @ w1) @ w2 + noise}


if __name__ == "__main__":
    args = parse_args("write a run file's samples and initial checkpoint")
    gen = torch.Generator().manual_seed(args.seed)
    init = consolidated_init(args, gen)
    outputs = {args.load: init, args.data_path: synthetic_samples(args, gen)}
    for path, blob in outputs.items():
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        torch.save(blob, path)
        print(f"wrote {path}")
    print(f"{len(init)} tensors, {sum(not is_replicated(n) for n in init)} partitioned across tensor-parallel ranks")
