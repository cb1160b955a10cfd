"""Scenario data in the workspace's record format, drawn by the grader itself.

Records are laid out as ``BOS TASK prompt... SEP response... EOS`` over a 128-token vocabulary
(0 is padding and never appears inside a record); the response and its EOS are supervised,
everything else has label -100. Every record's ``input_ids`` is unique, so a consumed row of
ids identifies its record.

Both phases draw the same records from the scenario's recipe: the run phase to feed the
pipeline, the judge again for itself (it never takes data from the artifacts).
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from tokkit.scenario import DataRecipe

PAD_ID, BOS_ID, EOS_ID, SEP_ID = 0, 1, 2, 3
TASK_IDS = (4, 5, 6)
FIRST_WORD, VOCAB_SIZE = 8, 128
IGNORE_INDEX = -100

Lengths = tuple[int, int]  # (prompt tokens, response tokens)


@dataclass(frozen=True)
class Record:
    """One pre-tokenized training record."""

    input_ids: tuple[int, ...]
    labels: tuple[int, ...]

    @property
    def target_count(self) -> int:
        """Supervised next-token predictions (labels after the causal shift)."""
        return sum(1 for label in self.labels[1:] if label != IGNORE_INDEX)


def _bimodal(rng: random.Random) -> Lengths:
    # Short answers to long prompts, or long answers to short prompts: micro-batches then hold
    # very different numbers of supervised tokens.
    if rng.random() < 0.5:
        return rng.randint(16, 40), 1
    return rng.randint(4, 12), rng.randint(24, 40)


def _ragged(rng: random.Random) -> Lengths:
    return rng.randint(4, 16), rng.randint(6, 18)


def _equal(rng: random.Random) -> Lengths:
    # Same supervised count in every record; prompts (hence padding) still vary.
    return rng.randint(4, 30), 12


RECIPES: dict[str, Callable[[random.Random], Lengths]] = {
    "bimodal": _bimodal,
    "ragged": _ragged,
    "equal": _equal,
}


def _words(rng: random.Random, count: int) -> list[int]:
    return [rng.randrange(FIRST_WORD, VOCAB_SIZE) for _ in range(count)]


def _record(rng: random.Random, lengths: Lengths) -> Record:
    prompt_len, response_len = lengths
    context = [BOS_ID, rng.choice(TASK_IDS), *_words(rng, prompt_len), SEP_ID]
    target = [*_words(rng, response_len), EOS_ID]
    return Record(
        input_ids=tuple(context + target),
        labels=tuple([IGNORE_INDEX] * len(context) + target),
    )


def generate(recipe: DataRecipe) -> list[Record]:
    """Draw ``recipe.records`` distinct records, deterministically for the recipe's seed."""
    if recipe.recipe not in RECIPES:
        raise ValueError(f"unknown data recipe {recipe.recipe!r}; known: {sorted(RECIPES)}")
    lengths = RECIPES[recipe.recipe]
    rng = random.Random(recipe.seed)
    records: list[Record] = []
    seen: set[tuple[int, ...]] = set()
    while len(records) < recipe.records:
        record = _record(rng, lengths(rng))
        if record.input_ids not in seen:
            seen.add(record.input_ids)
            records.append(record)
    return records


def write_jsonl(records: list[Record], path: Path) -> None:
    """Write records in the workspace's JSONL format."""
    with open(path, "w", encoding="utf-8") as handle:
        for record in records:
            line = {"input_ids": list(record.input_ids), "labels": list(record.labels)}
            handle.write(json.dumps(line, separators=(",", ":")) + "\n")


def row_key(row: list[int]) -> tuple[int, ...]:
    """A consumed row of ids with its padding stripped, as a lookup key."""
    start, end = 0, len(row)
    while start < end and row[start] == PAD_ID:
        start += 1
    while end > start and row[end - 1] == PAD_ID:
        end -= 1
    return tuple(row[start:end])
