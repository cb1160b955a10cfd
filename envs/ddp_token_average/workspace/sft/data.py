"""Pre-tokenized SFT records and the batch collator.

A record is one JSON object per line: ``{"input_ids": [...], "labels": [...]}`` of equal
length, where ``labels`` holds -100 on prompt positions and the token ids on response positions.
"""

from __future__ import annotations

import json
from pathlib import Path

import torch
from torch.utils.data import Dataset

PAD_ID = 0
BOS_ID = 1
EOS_ID = 2
SEP_ID = 3
IGNORE_INDEX = -100

Record = dict[str, list[int]]


def read_jsonl(path: str | Path) -> list[Record]:
    """Read pre-tokenized records, checking that ids and labels line up."""
    records: list[Record] = []
    with open(path, encoding="utf-8") as handle:
        for line_no, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            record = json.loads(line)
            if len(record["input_ids"]) != len(record["labels"]):
                raise ValueError(f"{path}:{line_no}: input_ids and labels differ in length")
            records.append({"input_ids": record["input_ids"], "labels": record["labels"]})
    return records


class SFTDataset(Dataset[Record]):
    """Pre-tokenized prompt/response records, truncated to ``max_length`` tokens."""

    def __init__(self, path: str | Path, max_length: int) -> None:
        self.records = read_jsonl(path)
        self.max_length = max_length

    def __len__(self) -> int:
        return len(self.records)

    def __getitem__(self, index: int) -> Record:
        record = self.records[index]
        return {
            "input_ids": record["input_ids"][: self.max_length],
            "labels": record["labels"][: self.max_length],
        }


def _pad(rows: list[list[int]], value: int, width: int) -> torch.Tensor:
    return torch.tensor([row + [value] * (width - len(row)) for row in rows], dtype=torch.long)


def collate(features: list[Record]) -> dict[str, torch.Tensor]:
    """Right-pad a list of records into ``input_ids``, ``attention_mask`` and ``labels``."""
    width = max(len(f["input_ids"]) for f in features)
    input_ids = [f["input_ids"] for f in features]
    return {
        "input_ids": _pad(input_ids, PAD_ID, width),
        "attention_mask": _pad([[1] * len(ids) for ids in input_ids], 0, width),
        "labels": _pad([f["labels"] for f in features], IGNORE_INDEX, width),
    }
