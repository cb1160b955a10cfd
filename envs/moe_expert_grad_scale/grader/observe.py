"""Reading what the run phase left behind, as data from an adversary.

Every read goes through the harness library's ``artifacts`` (bounded, regular files only);
tensors come only through ``torch.load(..., weights_only=True)`` of a zip checkpoint whose
unpacked size is checked first. Anything missing or malformed raises ``ArtifactError``,
which the judge turns into a ``fail`` with the message as the reason.
"""
from __future__ import annotations

import io
import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from artifacts import ArtifactError, check_zip, integer, number, read_bounded, read_json_object
from scenario import DENSE_NAMES, EXPERT_NAMES, Scenario

State = dict[str, torch.Tensor]
METRICS_LIMIT = 1 << 20
OBSERVE_LIMIT = 64 << 10
#: Layout version of the run kit's observer records (``kit/observe/layout_observer.py``).
RECORD_FORMAT = 1


@dataclass(frozen=True)
class StepRecord:
    """The fields of one ``metrics.jsonl`` record the judge uses (numbers or None)."""

    step: int
    loss: float | None
    step_time_s: float | None
    wall_time: float | None


@dataclass(frozen=True)
class RankState:
    """One rank's saved parameters: dense by name, experts by global id."""

    dense: State
    experts: dict[int, State]


@dataclass(frozen=True)
class Layout:
    """What the observer saw on one rank: MoE forwards and the layouts they ran with."""

    world: int
    forwards: int
    layers: list[tuple[int, int, int]]  # (ep_size, local_experts, ep_group_size)


@dataclass(frozen=True)
class Observation:
    """Per-step metrics, each rank's final parameters and each rank's observed layout."""

    metrics: list[StepRecord]
    ranks: list[RankState]
    layouts: list[Layout]


def read_metrics(path: Path, steps: int) -> list[StepRecord]:
    """``metrics.jsonl``: exactly one record per step, in order."""
    try:
        lines = read_bounded(path, METRICS_LIMIT).decode("utf-8").splitlines()
    except UnicodeDecodeError:
        raise ArtifactError("metrics.jsonl: not UTF-8") from None
    records = []
    for index, line in enumerate(ln for ln in lines if ln.strip()):
        try:
            raw = json.loads(line)
        except (ValueError, RecursionError):
            raise ArtifactError(f"metrics.jsonl line {index + 1}: not JSON") from None
        if not isinstance(raw, dict) or integer(raw.get("step")) != index:
            raise ArtifactError(f"metrics.jsonl line {index + 1}: not the record of step {index}")
        records.append(StepRecord(index, number(raw.get("loss")), number(raw.get("step_time_s")),
                                  number(raw.get("wall_time"))))
    if len(records) != steps:
        raise ArtifactError(f"metrics.jsonl: {len(records)} step records, the run had {steps} steps")
    return records


def _tensors(value: Any, names: tuple[str, ...], what: str) -> State:
    """A ``{name: float tensor}`` dict with exactly ``names``."""
    if not isinstance(value, dict) or set(value) != set(names):
        got = sorted(map(str, value))[:8] if isinstance(value, dict) else type(value).__name__
        raise ArtifactError(f"{what}: expected parameters {sorted(names)}, found {got}")
    out = {}
    for name in names:
        tensor = value[name]
        if not isinstance(tensor, torch.Tensor) or not tensor.is_floating_point():
            raise ArtifactError(f"{what} {name}: not a floating-point tensor")
        out[name] = tensor.detach().to(torch.float64)
    return out


def read_rank_state(path: Path, limit: int, rank: int) -> RankState:
    """``checkpoints/final/rankR.pt`` in the README's consolidated layout."""
    data = read_bounded(path, limit)
    check_zip(data, path.name, 2 * limit)
    try:
        raw = torch.load(io.BytesIO(data), map_location="cpu", weights_only=True)
    except Exception as err:  # noqa: BLE001 - any unpickling failure is a malformed artifact
        raise ArtifactError(f"{path.name}: unreadable ({type(err).__name__})") from None
    if not isinstance(raw, dict) or not isinstance(raw.get("experts"), dict):
        raise ArtifactError(f"{path.name}: not a {{'dense', 'experts'}} dict")
    dense = _tensors(raw.get("dense"), DENSE_NAMES, f"rank {rank} dense")
    experts = {}
    for gid, params in raw["experts"].items():
        if not isinstance(gid, int) or isinstance(gid, bool):
            raise ArtifactError(f"rank {rank}: expert id {str(gid)[:20]!r} is not an integer")
        experts[gid] = _tensors(params, EXPERT_NAMES, f"rank {rank} expert {gid}")
    return RankState(dense, experts)


def read_layout(path: Path) -> Layout:
    """``observe/rankR.json`` from the kit's layout observer."""
    raw = read_json_object(path, OBSERVE_LIMIT)
    world, forwards, layers = integer(raw.get("world")), integer(raw.get("forwards")), raw.get("layers")
    if integer(raw.get("format")) != RECORD_FORMAT or world is None or forwards is None or not isinstance(layers, list):
        raise ArtifactError(f"{path.name}: not a layout record of format {RECORD_FORMAT}")
    seen = []
    for layer in layers[:16]:
        if not isinstance(layer, dict):
            raise ArtifactError(f"{path.name}: malformed layer entry")
        values = tuple(integer(layer.get(k)) for k in ("ep_size", "local_experts", "ep_group_size"))
        if any(v is None for v in values):
            raise ArtifactError(f"{path.name}: malformed layer entry")
        seen.append((int(values[0] or 0), int(values[1] or 0), int(values[2] or 0)))
    return Layout(world, forwards, seen)


def observe(folder: Path, sc: Scenario) -> Observation:
    """Everything the judge reads from ``ARTIFACTS/<scenario>/``."""
    metrics = read_metrics(folder / "metrics.jsonl", sc.steps)
    ranks = [read_rank_state(folder / "checkpoints" / "final" / f"rank{r}.pt", sc.state_limit_bytes, r)
             for r in range(sc.world)]
    layouts = [read_layout(folder / "observe" / f"rank{r}.json") for r in range(sc.world)]
    return Observation(metrics, ranks, layouts)


def finite(value: float | None) -> bool:
    """A real, finite number."""
    return value is not None and math.isfinite(value)
