"""Write a synthetic token corpus to data.path: ``python -m relaylm.prepare --config CONFIG``.

Sequences come from a random first-order Markov chain over the vocabulary (seeded), so there is
something to learn.
"""
from __future__ import annotations

from pathlib import Path

import torch

from relaylm import settings


def main() -> None:
    cfg = settings.load()
    vocab, seq = cfg.get("model.vocab_size"), cfg.get("data.seq_len")
    rows = cfg.get("data.global_batch") * 64
    gen = torch.Generator().manual_seed(cfg.get("seed") + 1)
    trans = torch.softmax(torch.randn(vocab, vocab, generator=gen) * 3, dim=-1)
    out = torch.empty(rows, seq + 1, dtype=torch.long)
    out[:, 0] = torch.randint(vocab, (rows,), generator=gen)
    for t in range(1, seq + 1):
        out[:, t] = torch.multinomial(trans[out[:, t - 1]], 1, generator=gen).squeeze(1)
    path = Path(cfg.get("data.path"))
    path.parent.mkdir(parents=True, exist_ok=True)
    torch.save(out, path)
    print(f"wrote {rows} sequences of {seq + 1} tokens to {path}")


if __name__ == "__main__":
    main()
