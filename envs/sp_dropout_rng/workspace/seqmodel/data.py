"""Synthetic sequences: batch ``i`` depends only on ``data.seed`` and ``i``."""
from __future__ import annotations

import torch

from seqmodel.config import Config


def batch(cfg: Config, step: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(inputs [s, b, input_dim], targets [s, b, output_dim]), the same on every rank."""
    gen = torch.Generator().manual_seed(cfg.data.seed * 100_003 + step)
    s, b = cfg.data.seq_length, cfg.data.batch_size
    x = torch.randn(s, b, cfg.model.input_dim, generator=gen)
    mix = torch.randn(cfg.model.input_dim, cfg.model.output_dim, generator=gen)
    y = torch.tanh(x @ mix) + 0.1 * torch.randn(s, b, cfg.model.output_dim, generator=gen)
    return x, y
