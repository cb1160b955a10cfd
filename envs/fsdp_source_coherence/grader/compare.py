"""Comparing a run's recorded state with the authentic sources and the oracles."""
from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

Tensors = dict[str, torch.Tensor]
STATE_FIELDS = ("init", "params", "buffers", "grads", "opt")


@dataclass
class RunRecord:
    """What the probe wrote for one run: rank 0's state (initial and final parameters as tensors,
    every field as per-entry digests), every rank's RNG state and model digests."""

    state: dict[str, Any]
    digests: dict[str, dict[str, str]]
    rngs: list[torch.Tensor]
    init_digests: list[str]
    final_digests: list[str]
    timing: dict[str, float]

    @property
    def replicas_equal(self) -> bool:
        """Whether every rank gathered the same model, before and after training."""
        return len(set(self.init_digests)) == 1 and len(set(self.final_digests)) == 1


def load_record(folder: Path, world: int) -> RunRecord | None:
    """Read `rank<r>.pt` for every rank, or None when any is missing."""
    paths = [folder / f"rank{r}.pt" for r in range(world)]
    if not all(p.is_file() for p in paths):
        return None
    # weights_only: records come from the process under test, so never unpickle code.
    ranks = [torch.load(p, weights_only=True) for p in paths]
    return RunRecord(
        state=ranks[0]["state"],
        digests=ranks[0]["digests"],
        rngs=[r["rng"] for r in ranks],
        init_digests=[r["init_digest"] for r in ranks],
        final_digests=[r["final_digest"] for r in ranks],
        timing=ranks[0]["timing"],
    )


def bitwise_equal(x: Any, y: Any) -> bool:
    """Exact equality of nested dicts/lists/tuples of tensors and plain values."""
    if isinstance(x, dict):
        return isinstance(y, dict) and x.keys() == y.keys() and all(bitwise_equal(x[k], y[k]) for k in x)
    if isinstance(x, (list, tuple)):
        return isinstance(y, (list, tuple)) and len(x) == len(y) and all(map(bitwise_equal, x, y))
    if torch.is_tensor(x):
        return torch.is_tensor(y) and x.dtype == y.dtype and x.shape == y.shape and torch.equal(x, y)
    return x == y


def differing_fields(run: RunRecord, oracle: RunRecord) -> list[str]:
    """State fields (and per-rank RNG) in which `run` is not bitwise equal to `oracle`."""
    fields = [f for f in STATE_FIELDS if run.digests.get(f) != oracle.digests[f]]
    if not bitwise_equal(run.rngs, oracle.rngs):
        fields.append("rng")
    return fields


def _rows_equal(t: torch.Tensor, ref: torch.Tensor) -> torch.Tensor:
    """Per-row (dim 0) equality; FSDP shards along dim 0, so a hybrid mixes whole rows."""
    eq = t == ref
    return eq.flatten(1).all(1) if t.dim() > 1 else eq


def tensor_origin(t: torch.Tensor, candidates: dict[str, torch.Tensor | None]) -> str:
    """Which source a tensor is: a source name, 'mixed' (every row from some source), 'neither'."""
    usable = {s: c for s, c in candidates.items() if c is not None and c.shape == t.shape and c.dtype == t.dtype}
    for source, ref in usable.items():
        if torch.equal(t, ref):
            return source
    if usable:
        covered = torch.zeros(t.shape[0] if t.dim() else 1, dtype=torch.bool)
        for ref in usable.values():
            covered |= _rows_equal(t, ref).reshape(-1)
        if bool(covered.all()):
            return "mixed"
    return "neither"


def provenance(init: Tensors, sources: dict[str, Tensors]) -> dict[str, str]:
    """Origin of every tensor of the initial model; names missing from `init` are 'absent'."""
    names = sorted(set(init) | set().union(*(set(s) for s in sources.values())))
    return {
        n: tensor_origin(init[n], {s: p.get(n) for s, p in sources.items()}) if n in init else "absent"
        for n in names
    }


def provenance_counts(origins: dict[str, str]) -> dict[str, int]:
    """How many tensors came from each origin."""
    return dict(sorted(Counter(origins.values()).items()))


def max_abs_param_diff(run: Tensors, ref: Tensors) -> float:
    """max |run - ref| over all parameters; inf when names or shapes differ."""
    if run.keys() != ref.keys() or any(run[n].shape != ref[n].shape for n in run):
        return math.inf
    return max((float((run[n].double() - ref[n].double()).abs().max()) for n in run if run[n].numel()), default=0.0)
