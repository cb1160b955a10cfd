"""One frozen scenario of TrainFail/AdmissionBackwardOOM-v2 and the calls it sends (public: the
run phase reads it too).

A scenario is a rank (model, runtime, budget) and its calls, each a list of request groups that
this module expands, deterministically from ``seed``, into the README's ``calls.json``. With
``files = 2`` the calls are served from two files in one process (the README's several-files
form; the second file's rank is ``second_model``). Nothing here is private.
"""
from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from scenario_base import params_base  # the harness library

IGNORE = -100


@dataclass(frozen=True)
class Scenario(params_base(Path(__file__).with_name("params.toml"))):
    """The rank, its budget and its calls (``params.toml``: the base scenario, the README examples'
    rank and budget)."""

    def validate(self) -> None:
        if not self.calls or self.files not in (1, 2) or (self.files == 2) != bool(self.second_model):
            raise ValueError("a scenario needs calls, and second_model exactly when files = 2")
        if self.budget_bytes < 1 or (self.files == 2 and self.second_budget_bytes < 1):
            raise ValueError("budgets must be positive")

    def specs(self) -> list[dict[str, Any]]:
        """The ``calls.json`` content of each file, generated from ``seed``."""
        rng = random.Random(self.seed)
        ranks = [(self.model, self.budget_bytes), (self.second_model, self.second_budget_bytes)]
        out = []
        for index in range(self.files):
            model, budget = ranks[index]
            calls = [expand(call, int(model["vocab_size"]), rng) for call in self.calls[index :: self.files]]
            out.append({"model": dict(model), "runtime": dict(self.runtime), "budget_bytes": budget, "calls": calls})
        return out


def expand(call: dict[str, Any], vocab: int, rng: random.Random) -> dict[str, Any]:
    """One call: its groups (``count`` requests each), the whole list ``repeat`` times over."""
    groups = list(call["requests"]) * int(call.get("repeat", 1))
    requests = [request(g, vocab, rng) for g in groups for _ in range(int(g.get("count", 1)))]
    entry = {"name": call["name"], "requests": requests, "execute": bool(call.get("execute", True))}
    return entry | ({"runtime": dict(call["runtime"])} if "runtime" in call else {})


def positions(spec: Any, length: int, prompt: int) -> list[int] | None:
    """``"all"``, ``"prompt"``, ``"last"`` or a stride (every n-th position) of a request."""
    named = {"all": range(length), "prompt": range(prompt), "last": [length - 1]}
    if spec is None or isinstance(spec, bool):
        return None
    return list(named[spec] if isinstance(spec, str) else range(0, length, int(spec)))


def request(group: dict[str, Any], vocab: int, rng: random.Random) -> dict[str, Any]:
    """Tokens; labels after ``prompt`` (``-100`` on the prompt, every ``ignore_stride``-th response
    position and the last ``pad`` positions) unless ``target = false``; logits and top-k rows."""
    length, prompt, pad = int(group["length"]), int(group.get("prompt", 0)), int(group.get("pad", 0))
    req: dict[str, Any] = {"tokens": [rng.randrange(vocab) for _ in range(length)]}
    if group.get("target", True):
        stride = int(group.get("ignore_stride", 0))
        masked = [i < prompt or i >= length - pad or bool(stride and (i - prompt) % stride == 0) for i in range(length)]
        req["labels"] = [IGNORE if m else rng.randrange(vocab) for m in masked]
    if (logits := positions(group.get("logits"), length, prompt)) is not None:
        req["logits"] = logits
    if (topk := positions(group.get("topk_on"), length, prompt)) is not None:
        req["topk_positions"], req["topk"] = topk, int(group.get("topk", 4))
    return req
