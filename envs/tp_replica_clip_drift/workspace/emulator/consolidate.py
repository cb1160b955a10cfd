"""Merge a DeepSpeed checkpoint's per-rank model states into one consolidated file.

    python -m emulator.consolidate outputs/tp2/checkpoints/final merged.pt

The result has the same keys and shapes as a TP=1 run's model, so checkpoints from
different tensor-parallel sizes can be compared directly.
"""
from __future__ import annotations

import argparse

import torch

from emulator.checkpoint import consolidate


def main(argv: list[str] | None = None) -> None:
    """Write the consolidated state dict of CKPT_DIR to OUT."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("ckpt_dir", help="checkpoint tag directory holding mp_rank_*_model_states.pt")
    parser.add_argument("out", help="output .pt file")
    args = parser.parse_args(argv)
    state = consolidate(args.ckpt_dir)
    torch.save(state, args.out)
    print(f"wrote {args.out}: {len(state)} tensors")


if __name__ == "__main__":
    main()
