"""``python -m emulator.consolidate TAG_DIR OUT.pt``: one TP=1-layout file from a run's
per-rank checkpoint (replicated parameters from rank 0)."""
from __future__ import annotations

import argparse

import torch

from emulator.checkpointing import merge_checkpoint

if __name__ == "__main__":
    cli = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    cli.add_argument("tag_dir")
    cli.add_argument("out")
    ns = cli.parse_args()
    merged = merge_checkpoint(ns.tag_dir)
    torch.save(merged, ns.out)
    print(f"{ns.out}: {len(merged)} tensors")
