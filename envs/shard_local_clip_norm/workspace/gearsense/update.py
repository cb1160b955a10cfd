"""One optimizer update from the accumulated gradients: clip to `max_grad_norm`, then step."""
from __future__ import annotations

import torch


def clipped_step(model: torch.nn.Module, optimizer: torch.optim.Optimizer, max_grad_norm: float,
                 norm_type: str) -> float:
    """Scale the gradients down to `max_grad_norm` when their norm is larger, step, clear them.

    Returns the gradient norm measured before clipping (printed on the console)."""
    norm = torch.nn.utils.clip_grad_norm_(model.parameters(), max_grad_norm, norm_type=float(norm_type))
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    return float(norm)
