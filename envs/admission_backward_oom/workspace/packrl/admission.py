"""Admission: price a call's peak memory and decide to run it whole, split it, or refuse it.

A trainer rank has a fixed memory budget for a call (``budget_bytes``). Before a packed call
runs, the planner prices its demand:

* ``bounds(call)`` is the cheap estimate: a lower and an upper bound on the demand from counts
  alone (rows, projected rows, output sizes), used to prune candidate pieces when splitting;
* ``demand(call)`` is the exact price; it materializes the call's layout only when the cheap
  bounds differ;
* ``plan(call)`` runs the call whole if its demand fits, otherwise splits it into consecutive
  groups of requests that each fit (greedily, as large as possible), and refuses it when a
  single request does not fit on its own.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

from .calls import Call
from .config import BF16_BYTES, PROJECTION_CHUNK_ROWS, ModelConfig, RuntimeConfig

#: Headroom over the modelled peak (allocator fragmentation, small temporaries).
SAFETY_FACTOR = 1.10
#: Working set of one decoder layer's recompute + backward, in hidden-size BF16 vectors per row
#: (attention q/k/v/out, MLP gate/up/down, norms, their gradients), from the profiler.
LAYER_WORKSET_VECTORS = 29
#: Live hidden-size vectors per row while the head projects in the forward pass
#: (final-layer output, normalised hidden state, projected-row gather).
FORWARD_HEAD_VECTORS = 3
#: Bytes of one top-k entry: a BF16 value and an int64 token id.
TOPK_ENTRY_BYTES = BF16_BYTES + 8


def parameter_bytes(cfg: ModelConfig) -> int:
    """Bytes of the BF16 gradients allocated during backward: every parameter but the head
    weight, whose gradient lives in its preallocated ``main_grad`` buffer."""
    h, f = cfg.hidden_size, cfg.ffn_hidden_size
    per_layer = 2 * h + 3 * h * h + h * h + 2 * f * h + f * h
    count = cfg.vocab_size * h + cfg.num_layers * per_layer + h
    return count * BF16_BYTES


def output_bytes(call: Call, cfg: ModelConfig) -> int:
    """Bytes of what the call returns: raw logits rows and top-k entries."""
    logits = len(call.logits_rows()) * cfg.vocab_size * BF16_BYTES
    topk = sum(k for _, k in call.topk_rows()) * TOPK_ENTRY_BYTES
    return logits + topk


def projected_row_count(call: Call) -> int:
    """Physical rows the vocabulary head projects (labelled, raw-logits and top-k rows)."""
    return len(set(call.labelled_rows()) | set(call.logits_rows()) | {r for r, _ in call.topk_rows()})


def static_peak(call: Call, cfg: ModelConfig) -> int:
    """The whole-call peak of the forward pass and of the decoder layers' backward."""
    row = cfg.hidden_size * BF16_BYTES
    layers = call.rows * row * (cfg.num_layers + LAYER_WORKSET_VECTORS)
    if call.trains:
        layers += parameter_bytes(cfg)
    chunk = min(projected_row_count(call), PROJECTION_CHUNK_ROWS)
    forward = call.rows * row * (cfg.num_layers + FORWARD_HEAD_VECTORS) + chunk * cfg.padded_vocab * BF16_BYTES
    return max(layers, forward)


@dataclass
class Plan:
    decision: str                       # "run", "split" or "refuse"
    demand_bytes: int                   # the whole call's price
    pieces: list[list[int]] = field(default_factory=list)        # request indices per piece
    piece_demand_bytes: list[int] = field(default_factory=list)
    reason: str = ""


class AdmissionPlanner:
    """Prices calls for one rank's model, runtime and budget."""

    def __init__(self, model: ModelConfig, runtime: RuntimeConfig, budget_bytes: int) -> None:
        self.model = model
        self.runtime = runtime
        self.budget_bytes = budget_bytes

    def _price(self, peak: int, call: Call) -> int:
        return math.ceil(SAFETY_FACTOR * (peak + output_bytes(call, self.model)))

    def bounds(self, call: Call) -> tuple[int, int]:
        """Cheap lower and upper bounds on ``demand(call)``."""
        price = self._price(static_peak(call, self.model), call)
        return price, price

    def demand(self, call: Call) -> int:
        """The exact price of running ``call`` whole."""
        lower, upper = self.bounds(call)
        if lower == upper:
            return lower
        return self._price(static_peak(call, self.model), call)

    def plan(self, call: Call) -> Plan:
        demand = self.demand(call)
        if demand <= self.budget_bytes:
            return Plan("run", demand, [list(range(len(call.requests)))], [demand])
        pieces: list[list[int]] = []
        prices: list[int] = []
        current: list[int] = []
        current_price = 0
        for index in range(len(call.requests)):
            candidate = current + [index]
            sub = call.subset(candidate)
            lower, _ = self.bounds(sub)
            price = self.demand(sub) if lower <= self.budget_bytes else lower
            if price <= self.budget_bytes:
                current, current_price = candidate, price
                continue
            if current:
                pieces.append(current)
                prices.append(current_price)
            alone = self.demand(call.subset([index]))
            if alone > self.budget_bytes:
                return Plan("refuse", demand, reason=f"request {index} alone needs {alone} bytes "
                                                     f"over the {self.budget_bytes}-byte budget")
            current, current_price = [index], alone
        pieces.append(current)
        prices.append(current_price)
        return Plan("split", demand, pieces, prices)
