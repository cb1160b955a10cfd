"""Scenario records in the workspace's JSONL format, drawn by the grader from a recipe.

``BOS TASK prompt... SEP response... EOS`` over a 128-token vocabulary, the response and its EOS
supervised, the rest labelled -100; or (recipe ``leading``, half its records) a continuation
without a prompt whose every token is supervised, the first too, though no position predicts it.
Id 0 (padding) never occurs inside a record and no two records share their ids, so a consumed row
names its record. The run kit writes the records for the pipeline; the judge draws them again.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from scenario import Scenario

PAD_ID, BOS_ID, EOS_ID, SEP_ID, TASK_IDS, FIRST_WORD, VOCAB_SIZE, IGNORE_INDEX = 0, 1, 2, 3, (4, 5, 6), 8, 128, -100

#: recipe -> (prompt tokens, or None for no prompt; response tokens). ``bimodal``: one-token
#: answers to long prompts or long answers to short ones, like the shipped mix; ``equal``: every
#: record supervises 12 tokens (prompts, hence padding, still vary).
RECIPES: dict[str, Callable[[random.Random], tuple[int | None, int]]] = {
    "bimodal": lambda r: (r.randint(16, 40), 1) if r.random() < 0.5 else (r.randint(4, 12), r.randint(24, 40)),
    "ragged": lambda r: (r.randint(4, 16), r.randint(6, 18)),
    "equal": lambda r: (r.randint(4, 30), 12),
    "leading": lambda r: (None, r.randint(6, 40)) if r.random() < 0.5 else (r.randint(4, 30), r.randint(1, 12)),
}


@dataclass(frozen=True)
class Record:
    input_ids: tuple[int, ...]
    labels: tuple[int, ...]

    @property
    def target_count(self) -> int:
        """Supervised predictions: labels after the causal shift that are not -100."""
        return sum(1 for label in self.labels[1:] if label != IGNORE_INDEX)


def words(rng: random.Random, count: int) -> list[int]:
    return [rng.randrange(FIRST_WORD, VOCAB_SIZE) for _ in range(count)]


def generate(sc: Scenario) -> list[Record]:
    """``sc.records`` distinct records, the same for the same recipe and seed."""
    rng, records = random.Random(sc.data_seed), {}
    while len(records) < sc.records:
        prompt, response = RECIPES[sc.recipe](rng)
        context = [] if prompt is None else [BOS_ID, rng.choice(TASK_IDS), *words(rng, prompt), SEP_ID]
        target = [*words(rng, response), EOS_ID]
        labels = target if prompt is None else [IGNORE_INDEX] * len(context) + target
        records.setdefault(tuple(context + target), Record(tuple(context + target), tuple(labels)))
    return list(records.values())


def write_jsonl(records: list[Record], path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    rows = (
        json.dumps({"input_ids": list(r.input_ids), "labels": list(r.labels)}, separators=(",", ":")) for r in records
    )
    path.write_text("".join(row + "\n" for row in rows), encoding="utf-8")
    return path


def row_key(row: list[int]) -> tuple[int, ...]:
    """A consumed row of ids without its right padding."""
    end = len(row)
    while end and row[end - 1] == PAD_ID:
        end -= 1
    return tuple(row[:end])
