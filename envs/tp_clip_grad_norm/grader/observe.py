"""Reading what the run left behind: the README-documented metrics and checkpoint."""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

State = dict[str, torch.Tensor]

# Megatron layout documented in the workspace README: column-parallel fc1 split along
# output rows, row-parallel fc2 weight along input columns; everything else replicated.
PARTITION_DIMS = {"mlp.fc1.weight": 0, "mlp.fc1.bias": 0, "mlp.fc2.weight": 1}


class IncompleteRun(Exception):
    """The run did not leave a full set of outputs."""


@dataclass(frozen=True)
class Observation:
    """Per-step metrics records and each tensor-parallel rank's final parameters."""

    metrics: list[dict[str, Any]]
    rank_states: list[State]


def partition_dim(name: str) -> int | None:
    """Split dimension of a parameter, or None if every rank holds a full copy."""
    return next((d for sfx, d in PARTITION_DIMS.items() if name.endswith(sfx)), None)


def read_metrics(path: Path, steps: int) -> list[dict[str, Any]]:
    """The ``metrics.jsonl`` records, which must cover steps 0..steps-1 in order."""
    if not path.is_file():
        raise IncompleteRun(f"no metrics file at {path}")
    records = [json.loads(ln) for ln in path.read_text(encoding="utf-8").splitlines() if ln.strip()]
    if [r.get("step") for r in records] != list(range(steps)):
        raise IncompleteRun(f"metrics cover {len(records)} records, expected steps 0..{steps - 1}")
    return records


def read_rank_states(ckpt_dir: Path, tp: int) -> list[State]:
    """Tensor parameters from ``mp_rank_XX_model_states.pt`` for every rank 0..tp-1."""
    states = []
    for rank in range(tp):
        path = ckpt_dir / f"mp_rank_{rank:02d}_model_states.pt"
        if not path.is_file():
            raise IncompleteRun(f"missing checkpoint file {path.name}")
        blob = torch.load(path, map_location="cpu", weights_only=True)
        states.append({k: v.float() for k, v in blob["module"].items() if isinstance(v, torch.Tensor)})
    return states


def observe(run_dir: Path, steps: int, tp: int) -> Observation:
    """Everything the verdict needs, or IncompleteRun."""
    return Observation(metrics=read_metrics(run_dir / "metrics.jsonl", steps),
                       rank_states=read_rank_states(run_dir / "checkpoints" / "final", tp))


def gather_full(states: list[State]) -> State:
    """Full (TP=1) parameters: split tensors concatenated in rank order, others from rank 0."""
    full = {}
    for name in states[0]:
        dim = partition_dim(name)
        full[name] = states[0][name] if dim is None else torch.cat([s[name] for s in states], dim)
    return full


def replicated_spread(states: list[State]) -> tuple[float, str]:
    """Largest difference of a replicated parameter between rank 0 and any other rank."""
    worst, where = 0.0, ""
    for name, ref in states[0].items():
        if partition_dim(name) is not None:
            continue
        for st in states[1:]:
            diff = (st[name] - ref).abs().max().item() if st[name].shape == ref.shape else float("inf")
            if diff > worst:
                worst, where = diff, name
    return worst, where
