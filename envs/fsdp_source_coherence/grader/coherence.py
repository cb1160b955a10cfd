"""Probe records read as adversarial data, checked against the pipeline's saved weights and
compared with the single-source oracles (judge side).

A record comes from the revision's processes and may say anything, so every field is validated
as it is read (types, sizes, digest format), and what the judge can recompute it does: the
whole-model digests from the per-entry ones, and the final parameters' digests from the weights
the pipeline saved. A record claiming a state the pipeline did not produce disagrees with its
product; one that agrees can at best describe correct training.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import torch
from artifacts import ArtifactError  # the harness library
from source_probe import FIELDS, combined, value_digest

HEX64 = re.compile(r"^[0-9a-f]{64}$")
MAX_ENTRIES, MAX_NAME, MAX_RNG_BYTES, MAX_ROWS = 4096, 300, 1 << 16, 1 << 20
#: Transformers 5.24 saves GPT-NeoX's ``lm_head.`` under the original checkpoints' ``embed_out.``.
SAVED_NAMES = {"embed_out.weight": "lm_head.weight"}


@dataclass(frozen=True)
class Record:
    """Every rank's RNG state and model digests; rank 0's per-entry digests and initial-row
    fingerprints; the final parameters in an oracle's."""

    rngs: list[torch.Tensor]
    replicas: list[tuple[str, str]]
    digests: dict[str, dict[str, str]]
    init_rows: dict[str, torch.Tensor]
    params: dict[str, torch.Tensor] | None


def _table(value: Any, what: str, ok: Any) -> dict[str, Any]:
    if not isinstance(value, dict) or len(value) > MAX_ENTRIES:
        raise ArtifactError(f"{what} is not a table of at most {MAX_ENTRIES} entries")
    if not all(isinstance(k, str) and 0 < len(k) <= MAX_NAME and ok(v) for k, v in value.items()):
        raise ArtifactError(f"{what} holds an entry of the wrong kind")
    return dict(value)


def _hex(value: Any) -> bool:
    return isinstance(value, str) and HEX64.match(value) is not None


def _dense(value: Any, dtype: torch.dtype | None = None, dim: int | None = None, most: int = 1 << 62) -> bool:
    return (type(value) in (torch.Tensor, torch.nn.Parameter) and value.layout == torch.strided
            and value.device.type == "cpu" and (dtype is None or value.dtype == dtype)
            and (dim is None or value.dim() == dim) and value.numel() <= most)  # fmt: skip


def parse_record(raws: list[dict[str, Any]], world: int, *, oracle: bool = False) -> Record:
    """The validated record of every rank (``readers.read_rank_records``' output)."""
    for raw in raws:
        if raw.get("world") != world or not _dense(raw.get("rng"), torch.uint8, 1, MAX_RNG_BYTES):
            raise ArtifactError(f"rank{raw.get('rank')}.pt: not a record of a {world}-rank run with an RNG state")
        if not (_hex(raw.get("init_digest")) and _hex(raw.get("final_digest"))):
            raise ArtifactError(f"rank{raw.get('rank')}.pt: model digests are not sha256 digests")
    head = raws[0]
    table = _table(head.get("digests"), "rank0.pt digests", lambda v: isinstance(v, dict))
    if set(table) != set(FIELDS):
        raise ArtifactError(f"rank0.pt digests cover {sorted(table)[:8]}, not {list(FIELDS)}")
    digests = {f: _table(table[f], f"rank0.pt {f} digests", _hex) for f in FIELDS}
    rows = _table(head.get("init_rows"), "rank0.pt init_rows", lambda v: _dense(v, torch.int64, 1, MAX_ROWS))
    params = _table(head.get("params"), "oracle parameters", _dense) if oracle else None
    return Record([r["rng"] for r in raws], [(r["init_digest"], r["final_digest"]) for r in raws], digests, rows,
                  params)  # fmt: skip


def saved_names(saved: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """Saved weights keyed by the model's parameter names, as the probe records them."""
    return {SAVED_NAMES.get(name, name): value for name, value in saved.items()}


def inconsistencies(run: Record, weights: dict[str, torch.Tensor]) -> list[str]:
    """Ways the run's records disagree with themselves or with the saved weights."""
    problems = []
    if combined(run.digests["init"]) != run.replicas[0][0] or combined(run.digests["params"]) != run.replicas[0][1]:
        problems.append("rank 0's whole-model digests are not those of its per-tensor digests")
    if set(run.init_rows) != set(run.digests["init"]):
        problems.append("the initial-row fingerprints cover other tensors than the initial digests")
    recorded = run.digests["params"]
    if set(recorded) != set(weights):
        problems.append(f"saved weights hold {len(weights)} tensors, the probe recorded {len(recorded)} "
                        f"(e.g. {sorted(set(recorded) ^ set(weights))[:3]})")  # fmt: skip
    differ = sorted(n for n in set(recorded) & set(weights) if value_digest(weights[n]) != recorded[n])
    if differ:
        problems.append(f"saved weights differ from the recorded final parameters in {len(differ)} tensors "
                        f"({differ[:3]})")  # fmt: skip
    return problems


def differing(run: Record, oracle: Record) -> list[str]:
    """The state fields, RNG states and replica digests in which the run differs from an oracle."""
    fields = [f for f in FIELDS if run.digests[f] != oracle.digests[f]]
    if len(run.rngs) != len(oracle.rngs) or not all(a.shape == b.shape and torch.equal(a, b)
                                                     for a, b in zip(run.rngs, oracle.rngs, strict=True)):
        fields.append("rng")
    return fields + (["replicas"] if run.replicas != oracle.replicas else [])


def row_origins(run: Record, oracles: dict[str, Record]) -> dict[str, int]:
    """How many rows of the initial model equal the same row of each source (or of none)."""
    counts = {**{source: 0 for source in oracles}, "neither": 0}
    for name, rows in run.init_rows.items():
        unmatched = torch.ones(rows.shape, dtype=torch.bool)
        for source, oracle in oracles.items():
            ref = oracle.init_rows.get(name)
            if ref is not None and ref.shape == rows.shape:
                hit = (rows == ref) & unmatched
                counts[source] += int(hit.sum())
                unmatched &= ~hit
        counts["neither"] += int(unmatched.sum())
    return counts
