"""Residual MLP: stem -> blocks -> final norm -> head.

With a device mesh, every block is handed to FSDP2 (`fully_shard`) as soon as it is built, so
a rank never holds more than one unsharded block while the model is assembled; the model's own
parameters (stem, final norm, head) are sharded by `runtime.prepare`.
"""
from __future__ import annotations

import torch
from torch import nn
from torch.distributed.fsdp import fully_shard


class Block(nn.Module):
    def __init__(self, width: int) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(width)
        self.up = nn.Linear(width, 2 * width)
        self.down = nn.Linear(2 * width, width)

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        return h + self.down(nn.functional.gelu(self.up(self.norm(h))))


class PulseNet(nn.Module):
    def __init__(self, features: int, width: int, depth: int, classes: int, mesh=None) -> None:
        super().__init__()
        self.stem = nn.Linear(features, width)
        self.blocks = nn.ModuleList()
        for _ in range(depth):
            block = Block(width)
            if mesh is not None:
                fully_shard(block, mesh=mesh)
            self.blocks.append(block)
        self.norm = nn.LayerNorm(width)
        self.head = nn.Linear(width, classes)

    def forward(self, window: torch.Tensor) -> torch.Tensor:
        h = self.stem(window)
        for block in self.blocks:
            h = block(h)
        return self.head(self.norm(h))
