"""Executing one packed call: forward, loss, backward, under the rank's memory budget."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import torch

from .calls import Call
from .head import Projection, ProjectedHead
from .memory import MemoryMeter
from .model import Decoder


@dataclass
class CallResult:
    ok: bool
    peak_bytes: int
    loss: float | None = None
    error: str = ""
    outputs: dict[str, Any] = field(default_factory=dict)


def run_call(model: Decoder, call: Call, budget_bytes: int | None = None) -> CallResult:
    """One forward (and, if any request has a target, backward) of ``call``.

    Gradients are accumulated into the parameters' ``.grad``; they are cleared before the call
    so every call starts from the same state.
    """
    model.zero_grad(set_to_none=True)
    model.head_weight.main_grad.zero_()
    tokens = torch.tensor([t for r in call.requests for t in r.tokens], dtype=torch.long)
    proj = Projection.of(call)
    meter = MemoryMeter(budget_bytes)
    outputs: dict[str, Any] = {}
    try:
        with meter, torch.set_grad_enabled(call.trains):
            hidden = model(tokens, call.lengths)
            loss = ProjectedHead.apply(hidden, model.head_weight, proj, model.cfg.vocab_size, outputs)
            del hidden
            if call.trains:
                loss.backward()
            value = float(loss.detach())
            del loss
    except torch.OutOfMemoryError as err:
        model.zero_grad(set_to_none=True)
        return CallResult(False, meter.peak_bytes, error=str(err))
    return CallResult(True, meter.peak_bytes, value, outputs=outputs)
