"""Synthetic training table and consolidated initial checkpoint for a run config.

    python -m surrogate.prepare --config configs/tp2.yaml [section.key=value ...]

One generator seeded with ``seed`` draws the initial weights (normal matrices over
``sqrt(fan_in)``, biases and LayerNorm offsets at 0.1 scale, in the model's parameter order),
then ``train.steps x data.batch_size`` feature rows and a fixed random two-layer tanh teacher
whose outputs, plus a little noise, are the targets. Nothing depends on the tensor-parallel
size, so runs at different sizes start from the same files.
"""
from __future__ import annotations

import torch

from surrogate.config import ModelSettings, settings_from_command_line
from surrogate.sharding import split_axis


def initial_weights(shape: ModelSettings, gen: torch.Generator) -> dict[str, torch.Tensor]:
    """Full (TP=1) weights, in the model's parameter order."""
    h = shape.hidden_size
    layers = [("input_proj", (h, shape.input_dim))]
    for i in range(shape.num_layers):
        layers += [(f"blocks.{i}.ln", None), (f"blocks.{i}.mlp.fc1", (shape.ffn_hidden_size, h)),
                   (f"blocks.{i}.mlp.fc2", (h, shape.ffn_hidden_size))]
    layers += [("final_ln", None), ("head", (shape.output_dim, h))]
    weights: dict[str, torch.Tensor] = {}
    for stem, matrix in layers:
        if matrix is None:  # a LayerNorm: scale near 1, shift near 0
            weights[f"{stem}.weight"] = 1 + 0.1 * torch.randn(h, generator=gen)
            weights[f"{stem}.bias"] = 0.1 * torch.randn(h, generator=gen)
        else:
            rows, cols = matrix
            weights[f"{stem}.weight"] = torch.randn(rows, cols, generator=gen) / cols**0.5
            weights[f"{stem}.bias"] = 0.1 * torch.randn(rows, generator=gen)
    return weights


def teacher_table(shape: ModelSettings, rows: int, gen: torch.Generator) -> dict[str, torch.Tensor]:
    """Features ~ N(0, 1); targets from the teacher, plus noise of 0.05."""
    x = torch.randn(rows, shape.input_dim, generator=gen)
    layers = ((shape.input_dim, 4 * shape.input_dim), (4 * shape.input_dim, shape.output_dim))
    w_in, w_out = [torch.randn(fan_in, fan_out, generator=gen) / fan_in**0.5 for fan_in, fan_out in layers]
    return {"x": x, "y": torch.tanh(x @ w_in) @ w_out + 0.05 * torch.randn(rows, shape.output_dim, generator=gen)}


if __name__ == "__main__":
    settings = settings_from_command_line("write a run config's training table and initial checkpoint")
    gen = torch.Generator().manual_seed(settings.seed)
    weights = initial_weights(settings.model, gen)
    table = teacher_table(settings.model, settings.train.steps * settings.data.batch_size, gen)
    for target, blob in ((settings.model.init_checkpoint, weights), (settings.data.path, table)):
        target.parent.mkdir(parents=True, exist_ok=True)
        torch.save(blob, target)
        print(f"wrote {target}")
    split = [name for name in weights if split_axis(name) is not None]
    print(f"{len(weights)} tensors, {len(split)} split across tensor-parallel ranks")
