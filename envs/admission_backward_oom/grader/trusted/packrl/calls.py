"""Requests and packed calls.

A call packs several requests (sequences) into one batch of physical rows: request ``i``
occupies rows ``[offset_i, offset_i + len_i)``. Each request asks for one or more outputs:

* ``target``: the token loss over its labels (``-100`` marks an ignored position);
* ``logits``: the raw logits of the listed positions;
* ``topk``: the top-``k`` logits (values and token ids) of the listed positions.

Positions are indices into the request's own sequence.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

IGNORE_INDEX = -100


@dataclass(frozen=True)
class Request:
    tokens: tuple[int, ...]
    labels: tuple[int, ...] | None = None
    logits: tuple[int, ...] | None = None
    topk_positions: tuple[int, ...] | None = None
    topk: int = 0

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> "Request":
        def seq(key: str) -> tuple[int, ...] | None:
            value = raw.get(key)
            return None if value is None else tuple(int(v) for v in value)

        req = cls(tokens=seq("tokens") or (), labels=seq("labels"), logits=seq("logits"),
                  topk_positions=seq("topk_positions"), topk=int(raw.get("topk", 0)))
        n = len(req.tokens)
        if n == 0:
            raise ValueError("a request needs tokens")
        if req.labels is not None and len(req.labels) != n:
            raise ValueError("labels must have one entry per token")
        for pos in (req.logits or ()) + (req.topk_positions or ()):
            if not 0 <= pos < n:
                raise ValueError(f"position {pos} outside a {n}-token request")
        if req.topk_positions and req.topk < 1:
            raise ValueError("topk_positions need topk >= 1")
        return req

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"tokens": list(self.tokens)}
        if self.labels is not None:
            out["labels"] = list(self.labels)
        if self.logits is not None:
            out["logits"] = list(self.logits)
        if self.topk_positions is not None:
            out["topk_positions"] = list(self.topk_positions)
            out["topk"] = self.topk
        return out

    @property
    def has_target(self) -> bool:
        return self.labels is not None


@dataclass(frozen=True)
class Call:
    """A packed batch of requests executed as one forward/backward."""

    requests: tuple[Request, ...]
    offsets: tuple[int, ...] = field(init=False)

    def __post_init__(self) -> None:
        offsets, at = [], 0
        for req in self.requests:
            offsets.append(at)
            at += len(req.tokens)
        object.__setattr__(self, "offsets", tuple(offsets))

    @classmethod
    def from_dicts(cls, raws: list[dict[str, Any]]) -> "Call":
        return cls(tuple(Request.from_dict(r) for r in raws))

    def subset(self, indices: list[int]) -> "Call":
        return Call(tuple(self.requests[i] for i in indices))

    @property
    def rows(self) -> int:
        return sum(len(r.tokens) for r in self.requests)

    @property
    def lengths(self) -> list[int]:
        return [len(r.tokens) for r in self.requests]

    @property
    def trains(self) -> bool:
        """Whether the call runs backward (some request has a target loss)."""
        return any(r.has_target for r in self.requests)

    def logits_rows(self) -> list[int]:
        return [off + p for off, r in zip(self.offsets, self.requests) for p in (r.logits or ())]

    def topk_rows(self) -> list[tuple[int, int]]:
        """(physical row, k) for every top-k position."""
        return [(off + p, r.topk) for off, r in zip(self.offsets, self.requests)
                for p in (r.topk_positions or ())]

    def labelled_rows(self) -> list[int]:
        """Physical rows with a label other than IGNORE_INDEX."""
        return [off + i for off, r in zip(self.offsets, self.requests) if r.labels is not None
                for i, lab in enumerate(r.labels) if lab != IGNORE_INDEX]
