"""Merge a run's per-rank checkpoint into one consolidated (TP=1 layout) file.

    python -m surrogate.consolidate outputs/tp2/checkpoints/final outputs/tp2/consolidated.pt
"""
from __future__ import annotations

import sys

import torch

from surrogate.ckpt import merge_tag

if __name__ == "__main__":
    if len(sys.argv) != 3:
        raise SystemExit("usage: python -m surrogate.consolidate TAG_DIR OUT.pt")
    merged = merge_tag(sys.argv[1])
    torch.save(merged, sys.argv[2])
    print(f"wrote {sys.argv[2]}: {len(merged)} tensors")
