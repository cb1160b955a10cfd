"""The model, cut into pipeline stages.

Full model: token embedding E [vocab, hidden] -> num_blocks residual MLP blocks
(h + fc2(tanh(fc1(h)))) -> logits = h @ E^T. The output layer has no weight of its own: it is
the embedding table (tied). Blocks are split evenly over the stages; stage 0 adds the
embedding in front, the last stage adds the output layer behind.
"""
from __future__ import annotations

import torch
from torch import nn


class Block(nn.Module):
    def __init__(self, hidden: int, ffn: int) -> None:
        super().__init__()
        self.fc1 = nn.Linear(hidden, ffn)
        self.fc2 = nn.Linear(ffn, hidden)

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        return h + self.fc2(torch.tanh(self.fc1(h)))


class TiedHead(nn.Module):
    """The output layer: a copy of the embedding table on the last stage."""

    def __init__(self, vocab: int, hidden: int) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.zeros(vocab, hidden))

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        return h @ self.weight.t()


class Stage(nn.Module):
    def __init__(self, cfg: dict, stage: int, stages: int) -> None:
        super().__init__()
        vocab, hidden, ffn, nblocks = cfg["vocab_size"], cfg["hidden_size"], cfg["ffn_size"], cfg["num_blocks"]
        if nblocks % stages:
            raise SystemExit(f"{nblocks} blocks do not split over {stages} stages")
        per = nblocks // stages
        self.first, self.last = stage == 0, stage == stages - 1
        self.block_ids = list(range(stage * per, (stage + 1) * per))
        if self.first:
            self.embed = nn.Embedding(vocab, hidden)
        self.blocks = nn.ModuleDict({str(i): Block(hidden, ffn) for i in self.block_ids})
        if self.last:
            self.head = TiedHead(vocab, hidden)

    def tied_weight(self) -> nn.Parameter | None:
        if self.first:
            return self.embed.weight
        if self.last:
            return self.head.weight
        return None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.embed(x) if self.first else x
        for i in self.block_ids:
            h = self.blocks[str(i)](h)
        return self.head(h) if self.last else h

    # names as in the full model: embed.weight, blocks.<i>.fc1.weight, ..., head.weight
    def full_state(self) -> dict[str, torch.Tensor]:
        return {name: p.detach().clone() for name, p in self.named_parameters()}


def initial_state(cfg: dict, seed: int) -> dict[str, torch.Tensor]:
    """The full model's initial weights, identical on every rank (same seed everywhere)."""
    gen = torch.Generator().manual_seed(seed)
    vocab, hidden, ffn = cfg["vocab_size"], cfg["hidden_size"], cfg["ffn_size"]
    state = {"embed.weight": torch.randn(vocab, hidden, generator=gen) * 0.3}
    for i in range(cfg["num_blocks"]):
        state[f"blocks.{i}.fc1.weight"] = torch.randn(ffn, hidden, generator=gen) / hidden ** 0.5
        state[f"blocks.{i}.fc1.bias"] = torch.zeros(ffn)
        state[f"blocks.{i}.fc2.weight"] = torch.randn(hidden, ffn, generator=gen) / ffn ** 0.5
        state[f"blocks.{i}.fc2.bias"] = torch.zeros(hidden)
    return state


def load_stage(stage: Stage, full: dict[str, torch.Tensor]) -> None:
    with torch.no_grad():
        for name, p in stage.named_parameters():
            src = full["embed.weight"] if name == "head.weight" else full[name]
            p.copy_(src)
