"""Write ``examples/calls.json``: a few calls shaped like production traffic.

    python -m packrl.examples [--out examples/calls.json]
"""
from __future__ import annotations

import argparse
import json
import random
from pathlib import Path

MODEL = {"vocab_size": 16000, "hidden_size": 32, "num_layers": 4, "num_heads": 2, "ffn_hidden_size": 64}


def request(rng: random.Random, length: int, prompt: int, **outputs: object) -> dict:
    tokens = [rng.randrange(MODEL["vocab_size"]) for _ in range(length)]
    req: dict = {"tokens": tokens}
    if outputs.pop("target", True):
        req["labels"] = [-100 if i < prompt else rng.randrange(MODEL["vocab_size"]) for i in range(length)]
    req.update(outputs)
    return req


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("examples/calls.json"))
    args = parser.parse_args()
    rng = random.Random(0)
    calls = [
        {"name": "policy-update", "execute": True,
         "requests": [request(rng, 200, 100) for _ in range(6)]},
        {"name": "policy-update-with-kl", "execute": True,
         "requests": [request(rng, 240, 120, logits=list(range(120))) for _ in range(3)]
         + [request(rng, 200, 100, topk_positions=list(range(100)), topk=4) for _ in range(2)]},
        {"name": "short-prompts", "execute": True,
         "requests": [request(rng, 120, 20) for _ in range(4)]},
    ]
    spec = {"model": MODEL, "runtime": {"recompute": "full", "precision": "bf16", "head_hooks": False,
                                        "tensor_parallel": 1},
            "budget_bytes": 34_600_000, "calls": calls}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(spec) + "\n", encoding="utf-8")
    print(f"wrote {args.out} ({len(calls)} calls)")


if __name__ == "__main__":
    main()
