"""The judge's own prices of a call: an independent implementation by chunk enumeration.

Written from the mechanism, not from the workspace planner: it walks the physical rows of the
packed call, forms the global union of rows any output projects, enumerates its 512-row chunks
in index order and counts, per chunk, the rows whose target backward is built (a target
request's labelled rows, and its ignored rows when another output projects them).

* ``legacy``: the static price the rank's planner shipped with (whole-call static peak plus
  outputs, times the 1.10 safety factor): what unsupported configurations must keep;
* ``demand``: ceil(1.10 x (max(static, retention + head) + outputs)) for supported
  configurations (full recompute, BF16, no head hooks, TP 1) of calls that train.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

CHUNK = 512
PAD = 128
BF16 = 2
SAFETY = 1.10
LAYER_WORKSET = 29     # shipped static model, hidden vectors per row (layer recompute + backward)
FORWARD_HEAD = 3       # shipped static model, hidden vectors per row while the head projects
IGNORE = -100
DEFAULT_MODEL = {"vocab_size": 4000, "hidden_size": 64, "num_layers": 4, "num_heads": 4, "ffn_hidden_size": 128}
DEFAULT_RUNTIME = {"recompute": "full", "precision": "bf16", "head_hooks": False, "tensor_parallel": 1}


@dataclass(frozen=True)
class Prices:
    rows: int
    union_rows: int
    target_graph_rows: int
    head_chunk_rows: int       # max target-graph rows in one projected chunk
    static: int
    retention: int
    head: int
    outputs: int
    supported: bool
    trains: bool
    legacy: int
    demand: int

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def supported(runtime: dict[str, Any]) -> bool:
    rt = {**DEFAULT_RUNTIME, **runtime}
    return rt["recompute"] == "full" and rt["precision"] == "bf16" and not rt["head_hooks"] \
        and int(rt["tensor_parallel"]) == 1


def prices(requests: list[dict[str, Any]], model: dict[str, Any], runtime: dict[str, Any]) -> Prices:
    m = {**DEFAULT_MODEL, **model}
    vocab, hidden = int(m["vocab_size"]), int(m["hidden_size"])
    layers, ffn = int(m["num_layers"]), int(m["ffn_hidden_size"])
    padded = -(-vocab // PAD) * PAD
    # walk the packed rows
    offset = 0
    others: set[int] = set()
    labelled: set[int] = set()
    target_request_rows: list[tuple[int, int]] = []  # (row, label) of requests with a target
    outputs = 0
    for req in requests:
        n = len(req["tokens"])
        for p in req.get("logits") or []:
            others.add(offset + p)
        outputs += len(req.get("logits") or []) * vocab * BF16
        k = int(req.get("topk", 0))
        for p in req.get("topk_positions") or []:
            others.add(offset + p)
        outputs += len(req.get("topk_positions") or []) * k * (BF16 + 8)
        if req.get("labels") is not None:
            for i, lab in enumerate(req["labels"]):
                target_request_rows.append((offset + i, lab))
                if lab != IGNORE:
                    labelled.add(offset + i)
        offset += n
    rows = offset
    trains = bool(target_request_rows)
    graph = {row for row, lab in target_request_rows if lab != IGNORE or row in others}
    union = sorted(others | labelled)
    head_chunk_rows = 0
    for start in range(0, len(union), CHUNK):
        count = sum(1 for row in union[start:start + CHUNK] if row in graph)
        head_chunk_rows = max(head_chunk_rows, count)
    # shipped static peak
    per_layer = 2 * hidden + 4 * hidden * hidden + 3 * ffn * hidden
    grads = (vocab * hidden + layers * per_layer + hidden) * BF16   # head weight: preallocated main_grad
    row_bytes = hidden * BF16
    body = rows * row_bytes * (layers + LAYER_WORKSET) + (grads if trains else 0)
    forward = rows * row_bytes * (layers + FORWARD_HEAD) + min(len(union), CHUNK) * padded * BF16
    static = max(body, forward)
    retention = rows * layers * hidden * BF16 if trains else 0
    head = 3 * head_chunk_rows * padded * BF16
    legacy = math.ceil(SAFETY * (static + outputs))
    ok = supported(runtime)
    demand = math.ceil(SAFETY * (max(static, retention + head) + outputs)) if (ok and trains) else legacy
    return Prices(rows, len(union), len(graph), head_chunk_rows, static, retention, head, outputs, ok, trains,
                  legacy, demand)
