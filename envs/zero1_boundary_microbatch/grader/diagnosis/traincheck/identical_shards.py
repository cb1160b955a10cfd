"""Reach helper: a copy of the shipped dataset in which every rank's shard of a 2-rank global batch
is rank 0's shard (the healthy control: the global-batch mean gradient then equals each rank's).

    python .reach/identical_shards.py data/train.pt .reach/train-identical.pt 32 2
"""

from __future__ import annotations

import sys

import torch


def main() -> None:
    src, dest, global_batch, ranks = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    blob = torch.load(src, weights_only=True)
    shard = global_batch // ranks
    out = {}
    for key in ("x", "y"):
        t = blob[key]
        steps = t.shape[0] // global_batch
        t = t[: steps * global_batch].view(steps, ranks, shard, -1)[:, :1].expand(-1, ranks, -1, -1)
        out[key] = t.reshape(steps * global_batch, -1).contiguous()
    torch.save(out, dest)


if __name__ == "__main__":
    main()
