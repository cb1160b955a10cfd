"""dup_halves.py SRC DST GLOBAL_BATCH REPLICAS: a corpus whose replicas read identical rows.

Every global batch of the source keeps its first GLOBAL_BATCH / REPLICAS rows and repeats them for
every replica, so each replica's gradient equals every other's (the condition under which summing
the tied gradient after the reduce-scatter happens to give the right sum).
"""
import sys

import torch

src, dst, batch, replicas = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
rows = torch.load(src, weights_only=True)
per = batch // replicas
out = rows.clone()
for start in range(0, rows.shape[0] - batch + 1, batch):
    head = rows[start:start + per]
    for r in range(replicas):
        out[start + r * per:start + (r + 1) * per] = head
torch.save(out, dst)
print(f"wrote {out.shape[0]} rows to {dst} ({replicas} identical replica shares per batch of {batch})")
