"""Synthetic simulator samples and the initial weights, for one config.

    python -m surrogate.prepare --config configs/dp2.yaml [section.field=value ...]

The targets come from a fixed random "teacher" (a tanh layer and a linear read-out, plus a
little noise), so the regression is learnable. The weights are the model's own default
initialisation under ``seed``; the samples are drawn from ``seed + 1``. The file holds exactly
``train.steps`` global batches; nothing depends on how a global batch is split across ranks
and micro-batches beyond its size, which is what makes equivalent configs comparable.
"""
from __future__ import annotations

import argparse
from pathlib import Path

import torch

from surrogate.model import Surrogate
from surrogate.options import Options, load_options


def samples(options: Options) -> dict[str, torch.Tensor]:
    """``train.steps`` global batches of (input, simulator output) pairs."""
    split = options.data
    count = split.micro_batch_size * split.gradient_accumulation_steps * options.parallel.data_parallel_size
    count *= options.train.steps
    d_in, d_out = options.model.input_dim, options.model.output_dim
    rng = torch.Generator().manual_seed(options.seed + 1)
    shapes = ((count, d_in), (d_in, 4 * d_in), (4 * d_in, d_out), (count, d_out))
    x, hidden, readout, noise = (torch.randn(*shape, generator=rng) for shape in shapes)
    teacher = torch.tanh(x @ (hidden / d_in**0.5)) @ (readout / (4 * d_in) ** 0.5)
    return {"x": x, "y": teacher + 0.05 * noise}


def main() -> None:
    parser = argparse.ArgumentParser(description="write the dataset and the initial weights of a config")
    parser.add_argument("--config", required=True)
    parser.add_argument("overrides", nargs="*")
    args = parser.parse_args()
    options = load_options(args.config, args.overrides)
    torch.manual_seed(options.seed)
    outputs = {options.model.init_checkpoint: Surrogate(options.model).state_dict(), options.data.path: samples(options)}
    for target, blob in outputs.items():
        Path(target).parent.mkdir(parents=True, exist_ok=True)
        torch.save(blob, target)
        print(f"prepared {target}")


if __name__ == "__main__":
    main()
