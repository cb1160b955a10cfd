"""Training data for the dev box: a deterministic token stream standing in for the corpus."""
from __future__ import annotations

from collections.abc import Iterator

import torch


def token_batches(vocab_size: int, batch_size: int, seq_len: int, seed: int) -> Iterator[torch.Tensor]:
    """Endless batches of token ids, shape (batch_size, seq_len), reproducible from `seed`.

    Each rank passes its own seed, so ranks see different data, as with a sharded loader.
    """
    generator = torch.Generator().manual_seed(seed)
    while True:
        yield torch.randint(0, vocab_size, (batch_size, seq_len), generator=generator)
