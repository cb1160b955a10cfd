"""The grader's own inputs, pure functions of the scenario: the run kit writes them for the
pipeline (README formats: a full-model init state dict, an int64 token tensor), the judge
regenerates them. Nothing is read back from the run."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import torch

from scenario import Scenario


@dataclass(frozen=True)
class Files:
    init: Path
    corpus: Path


def init_state(sc: Scenario) -> dict[str, torch.Tensor]:
    """Full-model initial weights (no head: it is the embedding table)."""
    gen = torch.Generator().manual_seed(1000 + sc.seed)
    h, f = sc.hidden_size, sc.ffn_size
    state = {"embed.weight": torch.randn(sc.vocab_size, h, generator=gen) * 0.4}
    for i in range(sc.num_blocks):
        state[f"blocks.{i}.fc1.weight"] = torch.randn(f, h, generator=gen) * h ** -0.5
        state[f"blocks.{i}.fc1.bias"] = torch.randn(f, generator=gen) * 0.1
        state[f"blocks.{i}.fc2.weight"] = torch.randn(h, f, generator=gen) * f ** -0.5
        state[f"blocks.{i}.fc2.bias"] = torch.randn(h, generator=gen) * 0.1
    return state


def corpus(sc: Scenario) -> torch.Tensor:
    """[corpus_rows, seq_len + 1] tokens from a seeded Markov chain."""
    gen = torch.Generator().manual_seed(2000 + sc.seed)
    trans = torch.softmax(torch.randn(sc.vocab_size, sc.vocab_size, generator=gen) * 2.5, dim=-1)
    rows = torch.empty(sc.corpus_rows, sc.seq_len + 1, dtype=torch.long)
    rows[:, 0] = torch.randint(sc.vocab_size, (sc.corpus_rows,), generator=gen)
    for t in range(1, sc.seq_len + 1):
        rows[:, t] = torch.multinomial(trans[rows[:, t - 1]], 1, generator=gen).squeeze(1)
    return rows


def write_inputs(sc: Scenario, folder: Path) -> Files:
    folder.mkdir(parents=True, exist_ok=True)
    files = Files(folder / "init.pt", folder / "corpus.pt")
    torch.save(init_state(sc), files.init)
    torch.save(corpus(sc), files.corpus)
    return files
