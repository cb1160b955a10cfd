"""GPipe-style schedule over point-to-point sends: all micro-batch forwards, then all backwards.

Activations travel stage s -> s+1 in the forward pass, their gradients s+1 -> s in the backward
pass. The last stage turns logits into the loss of its micro-batch, divided by the number of
micro-batches so that the accumulated gradient is the mean over the replica's batch.
"""
from __future__ import annotations

import torch
import torch.distributed as dist
import torch.nn.functional as F


def run_step(stage, lay, tokens: torch.Tensor, targets: torch.Tensor, micro_batches: int, hidden: int) -> float:
    """One training step's forwards and backwards on this rank; returns the replica's loss
    (last stage) or 0.0. Gradients accumulate into the parameters' ``.grad``."""
    rows = tokens.shape[0]
    if rows % micro_batches:
        raise SystemExit(f"{rows} rows per replica do not split into {micro_batches} micro-batches")
    mb = rows // micro_batches
    seq = tokens.shape[1]
    inputs, outputs, total = [], [], 0.0
    for m in range(micro_batches):
        sl = slice(m * mb, (m + 1) * mb)
        if lay.first:
            x = tokens[sl]
        else:
            x = torch.empty(mb, seq, hidden)
            dist.recv(x, src=lay.prev_rank)
            x.requires_grad_(True)
        y = stage(x)
        if lay.last:
            loss = F.cross_entropy(y.reshape(-1, y.shape[-1]), targets[sl].reshape(-1)) / micro_batches
            total += float(loss.detach())
            y = loss
        else:
            dist.send(y.detach().contiguous(), dst=lay.next_rank)
        inputs.append(x)
        outputs.append(y)
    for m in reversed(range(micro_batches)):
        x, y = inputs[m], outputs[m]
        if lay.last:
            y.backward()
        else:
            g = torch.empty_like(y)
            dist.recv(g, src=lay.next_rank)
            y.backward(g)
        if not lay.first:
            dist.send(x.grad.contiguous(), dst=lay.prev_rank)
    return total
