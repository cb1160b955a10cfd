"""Write data/corpus.jsonl: rows of 17 tokens from a fixed random bigram chain (deterministic)."""
from __future__ import annotations

import json
import random
from pathlib import Path

VOCAB, LENGTH, ROWS, SEED = 64, 17, 512, 0


def main() -> None:
    rng = random.Random(SEED)
    successors = {t: rng.sample(range(VOCAB), 3) for t in range(VOCAB)}
    lines = []
    for _ in range(ROWS):
        row = [rng.randrange(VOCAB)]
        while len(row) < LENGTH:
            row.append(rng.choice(successors[row[-1]]) if rng.random() < 0.9 else rng.randrange(VOCAB))
        lines.append(json.dumps({"tokens": row}))
    out = Path(__file__).resolve().parent.parent / "data" / "corpus.jsonl"
    out.parent.mkdir(exist_ok=True)
    out.write_text("\n".join(lines) + "\n")
    print(f"wrote {len(lines)} rows to {out}")


if __name__ == "__main__":
    main()
