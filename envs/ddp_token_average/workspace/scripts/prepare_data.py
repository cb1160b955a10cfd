"""Write the synthetic instruction mix used to smoke-test the pipeline.

Three tasks over a 128-token vocabulary, each record laid out as
``BOS TASK prompt... SEP response... EOS``, loss on the response and EOS only:

- classify: a long prompt answered by one class token;
- reverse:  the prompt reversed;
- sort:     the prompt sorted.

Usage: ``python scripts/prepare_data.py [--out data/sft_train.jsonl] [--records 512] [--seed 0]``
"""

from __future__ import annotations

import argparse
import json
import random
from collections.abc import Callable
from pathlib import Path

BOS_ID, EOS_ID, SEP_ID = 1, 2, 3
TASK_IDS = {"classify": 4, "reverse": 5, "sort": 6}
FIRST_WORD, VOCAB_SIZE = 8, 128
NUM_CLASSES = 8
IGNORE_INDEX = -100

Task = Callable[[random.Random], tuple[list[int], list[int]]]


def _words(rng: random.Random, low: int, high: int) -> list[int]:
    return [rng.randrange(FIRST_WORD, VOCAB_SIZE) for _ in range(rng.randint(low, high))]


def classify(rng: random.Random) -> tuple[list[int], list[int]]:
    """A long prompt whose answer is a single class token."""
    prompt = _words(rng, 16, 40)
    return prompt, [FIRST_WORD + sum(prompt) % NUM_CLASSES]


def reverse(rng: random.Random) -> tuple[list[int], list[int]]:
    """The prompt, reversed."""
    prompt = _words(rng, 8, 30)
    return prompt, prompt[::-1]


def sort(rng: random.Random) -> tuple[list[int], list[int]]:
    """The prompt, sorted."""
    prompt = _words(rng, 8, 30)
    return prompt, sorted(prompt)


TASKS: dict[str, tuple[Task, float]] = {
    "classify": (classify, 0.5),
    "reverse": (reverse, 0.25),
    "sort": (sort, 0.25),
}


def make_record(task: str, prompt: list[int], response: list[int]) -> dict[str, object]:
    """Lay out one record; only the response and its EOS are supervised."""
    context = [BOS_ID, TASK_IDS[task], *prompt, SEP_ID]
    target = [*response, EOS_ID]
    return {
        "task": task,
        "input_ids": context + target,
        "labels": [IGNORE_INDEX] * len(context) + target,
    }


def generate(records: int, seed: int) -> list[dict[str, object]]:
    """Draw ``records`` records from the task mix, deterministically for a seed."""
    rng = random.Random(seed)
    names = list(TASKS)
    weights = [TASKS[name][1] for name in names]
    out = []
    for _ in range(records):
        task = rng.choices(names, weights)[0]
        prompt, response = TASKS[task][0](rng)
        out.append(make_record(task, prompt, response))
    return out


def main() -> None:
    """Write the records as JSON lines."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("data/sft_train.jsonl"))
    parser.add_argument("--records", type=int, default=512)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with open(args.out, "w", encoding="utf-8") as handle:
        for record in generate(args.records, args.seed):
            handle.write(json.dumps(record, separators=(",", ":")) + "\n")
    print(f"wrote {args.records} records to {args.out}")


if __name__ == "__main__":
    main()
