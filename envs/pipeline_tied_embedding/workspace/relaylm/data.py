"""Token data: one int64 tensor [rows, seq_len + 1] saved with torch.save.

Step k reads rows [k * B, (k + 1) * B) of the file (B = data.global_batch, wrapping around the
file); replica d of D takes the d-th contiguous B / D of them. Inputs are a row's first
seq_len tokens, targets the same row shifted by one.
"""
from __future__ import annotations

import torch


def load(path: str, seq_len: int) -> torch.Tensor:
    rows = torch.load(path, weights_only=True)
    if rows.dim() != 2 or rows.shape[1] != seq_len + 1:
        raise SystemExit(f"{path}: expected [rows, {seq_len + 1}] tokens, got {list(rows.shape)}")
    return rows.long()


def replica_batch(rows: torch.Tensor, step: int, global_batch: int, dp_size: int, dp_rank: int):
    if global_batch % dp_size:
        raise SystemExit(f"global batch {global_batch} does not split over {dp_size} replicas")
    idx = torch.arange(step * global_batch, (step + 1) * global_batch) % rows.shape[0]
    per = global_batch // dp_size
    part = rows[idx[dp_rank * per:(dp_rank + 1) * per]]
    return part[:, :-1], part[:, 1:]
