"""Scenario layouts: the calls a scenario sends to the rank, generated from its parameters.

Pure and deterministic: the run kit writes them to ``calls.json``; the judge regenerates them.
Nothing here is private.
"""
from __future__ import annotations

import random
from typing import Any

IGNORE = -100


def _positions(spec: Any, length: int, prompt: int) -> list[int] | None:
    if spec in (None, "none", False):
        return None
    if spec == "all":
        return list(range(length))
    if spec == "prompt":
        return list(range(prompt))
    if spec == "response":
        return list(range(prompt, length))
    if spec == "last":
        return [length - 1]
    if isinstance(spec, int):
        return list(range(0, length, spec))
    raise ValueError(f"unknown position spec {spec!r}")


def make_request(group: dict[str, Any], vocab: int, rng: random.Random) -> dict[str, Any]:
    length = int(group["length"])
    prompt = int(group.get("prompt", 0))
    tokens = [rng.randrange(vocab) for _ in range(length)]
    req: dict[str, Any] = {"tokens": tokens}
    if group.get("target", True):
        labels = [IGNORE if i < prompt else rng.randrange(vocab) for i in range(length)]
        stride = int(group.get("ignore_stride", 0))
        if stride:
            labels = [IGNORE if (i >= prompt and (i - prompt) % stride == 0) else lab for i, lab in enumerate(labels)]
        req["labels"] = labels
    logits = _positions(group.get("logits"), length, prompt)
    if logits is not None:
        req["logits"] = logits
    topk_pos = _positions(group.get("topk_on"), length, prompt)
    if topk_pos is not None:
        req["topk_positions"] = topk_pos
        req["topk"] = int(group.get("topk", 4))
    return req


def make_calls(params: dict[str, Any]) -> dict[str, Any]:
    """The ``calls.json`` content of a scenario."""
    model = dict(params.get("model", {}))
    vocab = int(model.get("vocab_size", 4000))
    rng = random.Random(int(params.get("seed", 0)))
    calls = []
    for call in params["calls"]:
        requests = []
        for group in call["requests"]:
            for _ in range(int(group.get("count", 1))):
                requests.append(make_request(group, vocab, rng))
        entry = {"name": call["name"], "requests": requests, "execute": bool(call.get("execute", True))}
        if "runtime" in call:
            entry["runtime"] = dict(call["runtime"])
        calls.append(entry)
    return {"model": model, "runtime": dict(params.get("runtime", {})),
            "budget_bytes": int(params["budget_bytes"]), "calls": calls}
