"""Reading the run's artifacts for the judge, as data from an adversary.

Per scenario folder: ``observe/rank<R>.pt`` (the kit's dropout observer) and
``final/tp_rank_<RR>.pt`` (the pipeline's saved parameters, README layout). Tensors are loaded
with ``weights_only=True`` after the harness library's size and zip checks, and every field is
type-checked; anything else is an ``ArtifactError``, which the judge turns into a ``fail``.
"""
from __future__ import annotations

import io
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from artifacts import ArtifactError, check_zip, number, read_bounded, read_tail

from scenario import Scenario

__all__ = ["ArtifactError", "AutocastRecord", "Observation", "RankRecord", "StepRecord", "observe", "read_tail"]

METRICS_LIMIT = 4 << 20
#: The autocast states the kit's probe writes (``device:dtype`` of the innermost entered,
#: enabled autocast; ``off`` outside any): a closed set, anything else is malformed.
AUTOCAST_STATES = frozenset({"off", "cpu:bfloat16", "cpu:float16", "cuda:bfloat16", "cuda:float16"})
#: Most module forwards one step's autocast record may list (the README's model runs 16 at
#: two layers), and the longest module name.
AUTOCAST_MODULES_LIMIT = 4096
NAME_LIMIT = 200


@dataclass(frozen=True)
class AutocastRecord:
    """One step's autocast record: the state each module forward started in, in call order."""

    modules: tuple[tuple[str, str], ...]


@dataclass
class StepRecord:
    """One training step on one rank: the weights it started from, the masks it drew."""

    params: dict[str, torch.Tensor]
    masks: list[tuple[str, torch.Tensor]]
    #: Only in scenarios whose config asks for bf16 (the kit's autocast probe is on there).
    autocast: AutocastRecord | None = None


@dataclass
class RankRecord:
    """One tensor-parallel rank's observed steps and its saved final parameters."""

    rank: int
    steps: list[StepRecord]
    final: dict[str, torch.Tensor]


@dataclass(frozen=True)
class StepTiming:
    """One line of ``metrics.jsonl`` (untrusted; only splits a group's device-seconds)."""

    wall_time: float | None
    step_time_s: float | None


@dataclass
class Observation:
    """Every rank's records, and the timing lines of ``metrics.jsonl``."""

    ranks: list[RankRecord]
    metrics: list[StepTiming]


def load_tensors(path: Path, limit: int) -> Any:
    """``torch.load(weights_only=True)`` of a bounded regular file that unpacks within bounds."""
    data = read_bounded(path, limit)
    check_zip(data, path.name, 2 * limit)
    try:
        return torch.load(io.BytesIO(data), map_location="cpu", weights_only=True)
    except Exception as err:  # noqa: BLE001 - any unreadable file is the revision's doing
        raise ArtifactError(f"{path.name}: unreadable ({type(err).__name__})") from None


def read_timings(path: Path) -> list[StepTiming]:
    """Timing lines of ``metrics.jsonl``; empty if it is missing or malformed (never a verdict)."""
    try:
        text = read_bounded(path, METRICS_LIMIT).decode("utf-8", "replace")
    except ArtifactError:
        return []
    out = []
    for line in text.splitlines()[:10_000]:
        try:
            row = json.loads(line)
        except ValueError:
            return []
        if isinstance(row, dict):
            out.append(StepTiming(number(row.get("wall_time")), number(row.get("step_time_s"))))
    return out


def _tensor_dict(raw: Any, where: str) -> dict[str, torch.Tensor]:
    if not isinstance(raw, dict) or not raw:
        raise ArtifactError(f"{where}: expected a non-empty name -> tensor mapping")
    out = {}
    for key, value in raw.items():
        if not isinstance(key, str) or not isinstance(value, torch.Tensor) or not value.is_floating_point():
            raise ArtifactError(f"{where}: entry {str(key)[:60]!r} is not a floating-point tensor")
        if not torch.isfinite(value).all():
            raise ArtifactError(f"{where}: {key} holds non-finite values")
        out[key] = value.detach().to(torch.float64)
    return out


def _masks(raw: Any, where: str) -> list[tuple[str, torch.Tensor]]:
    if not isinstance(raw, list) or len(raw) > 10_000:
        raise ArtifactError(f"{where}: masks must be a list")
    out = []
    for item in raw:
        if (not isinstance(item, list | tuple) or len(item) != 2 or not isinstance(item[0], str)
                or not isinstance(item[1], torch.Tensor) or item[1].dtype != torch.bool):
            raise ArtifactError(f"{where}: each mask must be [module name, bool tensor]")
        out.append((item[0][:200], item[1]))
    return out


def _autocast(raw: Any, where: str) -> AutocastRecord:
    """The closed schema ``{"modules": [[name, state], ...]}``."""
    if not isinstance(raw, dict) or set(raw) != {"modules"}:
        raise ArtifactError(f"{where}: the autocast record must be {{'modules': [[name, state], ...]}}")
    modules = raw["modules"]
    if not isinstance(modules, list) or len(modules) > AUTOCAST_MODULES_LIMIT:
        raise ArtifactError(f"{where}: autocast modules must be a list of at most {AUTOCAST_MODULES_LIMIT}")
    out = []
    for item in modules:
        if (not isinstance(item, list | tuple) or len(item) != 2 or not isinstance(item[0], str)
                or len(item[0]) > NAME_LIMIT or item[1] not in AUTOCAST_STATES):
            raise ArtifactError(f"{where}: each autocast entry must be [module name, one of {sorted(AUTOCAST_STATES)}]")
        out.append((item[0], str(item[1])))
    return AutocastRecord(tuple(out))


def read_rank(folder: Path, sc: Scenario, rank: int) -> RankRecord:
    """One rank's observer record and saved parameters."""
    raw = load_tensors(folder / "observe" / f"rank{rank}.pt", sc.record_limit_bytes)
    if not isinstance(raw, dict) or raw.get("format") != 1 or raw.get("rank") != rank:
        raise ArtifactError(f"observe/rank{rank}.pt: not an observer record of rank {rank}")
    steps_raw = raw.get("steps")
    if not isinstance(steps_raw, list) or len(steps_raw) != sc.steps:
        count = len(steps_raw) if isinstance(steps_raw, list) else "no"
        raise ArtifactError(f"observe/rank{rank}.pt: {count} training steps recorded, expected {sc.steps}")
    steps = []
    for index, step in enumerate(steps_raw):
        where = f"rank {rank} step {index}"
        if not isinstance(step, dict):
            raise ArtifactError(f"{where}: not a step record")
        autocast = _autocast(step.get("autocast"), where) if sc.bf16 else None
        steps.append(StepRecord(_tensor_dict(step.get("params"), where), _masks(step.get("masks"), where), autocast))
    final_raw = load_tensors(folder / "final" / f"tp_rank_{rank:02d}.pt", sc.state_limit_bytes)
    return RankRecord(rank, steps, _tensor_dict(final_raw, f"final/tp_rank_{rank:02d}.pt"))


def observe(folder: Path, sc: Scenario) -> Observation:
    """Every rank's records, or an :class:`ArtifactError` saying what is missing."""
    ranks = [read_rank(folder, sc, rank) for rank in range(sc.tp)]
    return Observation(ranks, read_timings(folder / "metrics.jsonl"))
