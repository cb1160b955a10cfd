"""The corpus: documents of different lengths, one feature row and one target row per token.

File (``data.corpus``): ``torch.save({"x": FloatTensor[N, input_dim], "y": FloatTensor[N,
output_dim], "lengths": LongTensor[D]})`` with the ``D`` documents' tokens back to back, in order
(``lengths`` sums to ``N``).
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import torch


@dataclass(frozen=True)
class Corpus:
    x: torch.Tensor
    y: torch.Tensor
    starts: list[int]
    lengths: list[int]

    @classmethod
    def read(cls, path: str | Path) -> "Corpus":
        blob = torch.load(path, map_location="cpu", weights_only=True)
        lengths = [int(n) for n in blob["lengths"].tolist()]
        if sum(lengths) != blob["x"].shape[0] or blob["x"].shape[0] != blob["y"].shape[0]:
            raise ValueError(f"{path}: lengths do not cover the token rows")
        starts = [0]
        for n in lengths[:-1]:
            starts.append(starts[-1] + n)
        return cls(blob["x"].float(), blob["y"].float(), starts, lengths)

    @property
    def documents(self) -> int:
        return len(self.lengths)

    def share(self, step: int, docs_per_step: int, rank: int, world: int) -> tuple[torch.Tensor, torch.Tensor]:
        """Rank ``rank``'s tokens at ``step``: its contiguous ``docs_per_step / world`` documents of
        the step's documents ``step * docs_per_step ...`` (wrapping around), back to back."""
        if docs_per_step % world:
            raise ValueError(f"data.docs_per_step={docs_per_step} does not split over {world} ranks")
        per_rank = docs_per_step // world
        first = step * docs_per_step + rank * per_rank
        picked = [(first + j) % self.documents for j in range(per_rank)]
        rows = torch.cat([torch.arange(self.starts[d], self.starts[d] + self.lengths[d]) for d in picked])
        return self.x[rows], self.y[rows]
