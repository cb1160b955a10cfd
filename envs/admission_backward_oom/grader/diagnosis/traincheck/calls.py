"""Write a calls file in the workspace's format (README: "Running calls"): one call of COUNT
requests, each LENGTH tokens whose first PROMPT positions carry no target.

Usage: ``python calls.py OUT SEED BUDGET_BYTES COUNT LENGTH PROMPT``
"""

import json
import random
import sys

MODEL = {"vocab_size": 16000, "hidden_size": 32, "num_layers": 4, "num_heads": 2, "ffn_hidden_size": 64}


def main() -> None:
    out, seed, budget, count, length, prompt = sys.argv[1], *map(int, sys.argv[2:7])
    rng = random.Random(seed)
    vocab = MODEL["vocab_size"]
    requests = []
    for _ in range(count):
        tokens = [rng.randrange(vocab) for _ in range(length)]
        labels = [-100 if i < prompt else rng.randrange(vocab) for i in range(length)]
        requests.append({"tokens": tokens, "labels": labels})
    calls = [{"name": "call", "execute": True, "requests": requests}]
    with open(out, "w", encoding="utf-8") as handle:
        json.dump({"model": MODEL, "runtime": {}, "budget_bytes": budget, "calls": calls}, handle)


main()
