"""Machine-readable leaderboard files: JSONL (nested, as computed) and CSV (flattened)."""

from __future__ import annotations

import csv
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any


def write_jsonl(path: Path, rows: Sequence[Mapping[str, Any]]) -> Path:
    """One JSON object per line, keys sorted."""
    path.write_text("".join(json.dumps(r, sort_keys=True) + "\n" for r in rows), encoding="utf-8")
    return path


def flatten(row: Mapping[str, Any]) -> dict[str, Any]:
    """Nested spreads become ``metric_mean``, ``metric_sd``, … columns."""
    flat: dict[str, Any] = {}
    for key, value in row.items():
        if isinstance(value, Mapping):
            for inner, item in value.items():
                flat[f"{key}_{inner}"] = item
        else:
            flat[key] = value
    return flat


def write_csv(path: Path, rows: Sequence[Mapping[str, Any]]) -> Path:
    """A CSV with one column per (flattened) field, in first-seen order."""
    flat = [flatten(r) for r in rows]
    columns: list[str] = []
    for row in flat:
        columns.extend(k for k in row if k not in columns)
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=columns, extrasaction="ignore")
        writer.writeheader()
        writer.writerows(flat)
    return path
