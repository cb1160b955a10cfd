"""A synthetic corpus and the initial weight file (both a function of ``synth.seed``).

    python -m switchyard.synth --config configs/switch2.toml

Documents have ``synth.min_length .. synth.max_length`` tokens; each token's target is a fixed
random nonlinear function of its features, with a different function in each region of feature
space (something for experts to specialise on).
"""
from __future__ import annotations

import argparse
from pathlib import Path

import torch
from torch import nn

from switchyard import options
from switchyard.network import make_expert


def corpus(opts: options.Options, gen: torch.Generator) -> dict[str, torch.Tensor]:
    low, high = opts["synth.min_length"], opts["synth.max_length"]
    lengths = torch.randint(low, high + 1, (opts["synth.documents"],), generator=gen)
    n, d_in, d_out = int(lengths.sum()), opts["model.input_dim"], opts["model.output_dim"]
    x = torch.randn(n, d_in, generator=gen)
    centres = torch.randn(4, d_in, generator=gen)
    maps = torch.randn(4, d_in, d_out, generator=gen) / d_in**0.5
    region = (x @ centres.T).argmax(dim=1)
    y = torch.tanh(torch.einsum("ni,nio->no", x, maps[region])) + 0.05 * torch.randn(n, d_out, generator=gen)
    return {"x": x, "y": y, "lengths": lengths}


def initial_weights(opts: options.Options) -> dict[str, torch.Tensor]:
    hidden, ffn = opts["model.hidden_size"], opts["model.ffn_hidden_size"]
    embed = nn.Linear(opts["model.input_dim"], hidden)
    router = nn.Linear(hidden, opts["moe.num_experts"], bias=False)
    head = nn.Linear(hidden, opts["model.output_dim"])
    out = {"embed.weight": embed.weight, "embed.bias": embed.bias, "router.weight": router.weight,
           "head.weight": head.weight, "head.bias": head.bias}
    for gid in range(opts["moe.num_experts"]):
        for key, tensor in make_expert(hidden, ffn).named_parameters():
            out[f"experts.{gid}.{key}"] = tensor
    return {name: tensor.detach().clone() for name, tensor in out.items()}


def main(argv: list[str] | None = None) -> None:
    cli = argparse.ArgumentParser(description="write the synthetic corpus and initial weights")
    cli.add_argument("--config")
    cli.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE")
    args = cli.parse_args(argv)
    opts = options.load(args.config, args.overrides)
    torch.manual_seed(opts["synth.seed"])
    gen = torch.Generator().manual_seed(opts["synth.seed"])
    for target, blob in ((opts["data.corpus"], corpus(opts, gen)), (opts["init.checkpoint"], initial_weights(opts))):
        Path(target).parent.mkdir(parents=True, exist_ok=True)
        torch.save(blob, target)
        print(f"wrote {target}")


if __name__ == "__main__":
    main()
