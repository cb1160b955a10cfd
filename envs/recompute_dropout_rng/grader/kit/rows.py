"""The grader's corpus: ``rows`` distinct rows of ``seq_len + 1`` token ids drawn from ``data_seed``,
in the workspace's JSONL format. The run kit writes it for the pipeline; the judge draws it again."""
from __future__ import annotations

import json
from pathlib import Path

import torch
from scenario import Scenario


def generate(sc: Scenario) -> torch.Tensor:
    """``[rows, seq_len + 1]`` int64; rows are distinct in their first ``seq_len`` tokens."""
    gen = torch.Generator().manual_seed(10_007 * sc.data_seed + 17)
    out, seen = [], set()
    while len(out) < sc.rows:
        row = torch.randint(0, sc.vocab_size, (sc.seq_len + 1,), generator=gen)
        key = tuple(row[:-1].tolist())
        if key not in seen:
            seen.add(key)
            out.append(row)
    return torch.stack(out)


def write_jsonl(rows: torch.Tensor, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps({"tokens": r}) + "\n" for r in rows.tolist()), encoding="utf-8")
    return path
