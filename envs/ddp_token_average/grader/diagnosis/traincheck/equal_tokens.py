"""Write records in the workspace's format whose responses all have the same length.

With every record supervising the same number of tokens, every rank and micro-batch holds the
same count, so a per-micro-batch token mean equals the global one: the configuration the
case's healthy scenarios use, and the reach workflow's trusted and healthy runs.

Usage: ``python equal_tokens.py OUT SEED [RECORDS]``
"""

import json
import random
import sys

BOS_ID, EOS_ID, SEP_ID, FIRST_WORD, VOCAB_SIZE, RESPONSE = 1, 2, 3, 8, 128, 12


def main() -> None:
    out, seed = sys.argv[1], int(sys.argv[2])
    records = int(sys.argv[3]) if len(sys.argv) > 3 else 64
    rng = random.Random(seed)
    with open(out, "w", encoding="utf-8") as handle:
        for _ in range(records):
            prompt = [rng.randrange(FIRST_WORD, VOCAB_SIZE) for _ in range(rng.randint(4, 30))]
            answer = [rng.randrange(FIRST_WORD, VOCAB_SIZE) for _ in range(RESPONSE - 1)]
            context = [BOS_ID, 5, *prompt, SEP_ID]
            target = [*answer, EOS_ID]
            labels = [-100] * len(context) + target
            handle.write(json.dumps({"input_ids": context + target, "labels": labels}) + "\n")


main()
