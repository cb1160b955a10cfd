"""Reading what the run phase left behind, as data from an adversary.

Every read is bounded and type-checked: files must be regular (links are not followed),
within a size limit, and of the documented shape. Tensors come only through
``torch.load(..., weights_only=True)`` of a zip checkpoint whose unpacked size is checked
first. Anything missing or malformed raises :class:`ArtifactError`, which the judge turns
into a ``fail`` with the message as the reason.
"""
from __future__ import annotations

import io
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from artifacts import ArtifactError, check_zip, number, read_bounded, read_json_object, read_tail  # the harness library
import torch

State = dict[str, torch.Tensor]

METRICS_LIMIT = 4 << 20
#: A rank's saved state may unpack to at most this multiple of its file size limit.
STATE_UNPACK_RATIO = 2
JSON_LIMIT = 64 << 10
LOG_LIMIT = 256 << 10
MAX_RECORDS = 100_000

@dataclass(frozen=True)
class UpdateRecord:
    """The fields of one ``metrics.jsonl`` record the judge uses (numbers or None)."""

    update: int
    lr: float | None
    loss: float | None
    step_time_s: float | None
    wall_time: float | None


@dataclass(frozen=True)
class Observation:
    """Per-update metrics records and the saved final model."""

    metrics: list[UpdateRecord]
    state: State


def _record(line: str, index: int) -> UpdateRecord:
    """One metrics line, checked against the README's record shape."""
    try:
        raw = json.loads(line)
    except (ValueError, RecursionError):
        raise ArtifactError(f"metrics.jsonl line {index + 1} is not JSON") from None
    if not isinstance(raw, dict):
        raise ArtifactError(f"metrics.jsonl line {index + 1} is not a JSON object")
    update = raw.get("update")
    if isinstance(update, bool) or not isinstance(update, int):
        raise ArtifactError(f"metrics.jsonl line {index + 1}: 'update' is not an integer")
    return UpdateRecord(update=update, lr=number(raw.get("lr")), loss=number(raw.get("loss")),
                        step_time_s=number(raw.get("step_time_s")), wall_time=number(raw.get("wall_time")))


def read_metrics(path: Path, updates: int) -> list[UpdateRecord]:
    """The ``metrics.jsonl`` records, which must be updates 0..updates-1 in order."""
    try:
        text = read_bounded(path, METRICS_LIMIT).decode("utf-8")
    except UnicodeDecodeError:
        raise ArtifactError("metrics.jsonl is not UTF-8 text") from None
    lines = [ln for ln in text.splitlines() if ln.strip()]
    if len(lines) > MAX_RECORDS:
        raise ArtifactError(f"metrics.jsonl has {len(lines)} records")
    records = [_record(ln, i) for i, ln in enumerate(lines)]
    if [r.update for r in records] != list(range(updates)):
        raise ArtifactError(f"metrics cover {len(records)} records, expected updates 0..{updates - 1} in order")
    return records


def _state(blob: Any, name: str) -> State:
    """Parameter names to dense floating CPU tensors."""
    if not isinstance(blob, dict):
        raise ArtifactError(f"{name}: not a state dict")
    state: State = {}
    for key, value in blob.items():
        if not isinstance(key, str) or not isinstance(value, torch.Tensor):
            raise ArtifactError(f"{name}: entry {str(key)[:80]!r} is not a named tensor")
        if value.layout != torch.strided or not value.is_floating_point() or value.device.type != "cpu":
            raise ArtifactError(f"{name}: {key[:80]} is not a dense floating-point CPU tensor")
        state[key] = value.detach().to(torch.float64).contiguous()
    return state


def read_state(path: Path, limit: int) -> State:
    """The saved model from ``final/model.pt`` (at most ``limit`` bytes)."""
    data = read_bounded(path, limit)
    check_zip(data, path.name, STATE_UNPACK_RATIO * limit)
    try:
        blob = torch.load(io.BytesIO(data), map_location="cpu", weights_only=True)
    except Exception as err:  # noqa: BLE001 - any refusal of the safe loader is a bad file
        raise ArtifactError(f"{path.name}: refused by torch.load(weights_only=True): "
                            f"{type(err).__name__}") from None
    return _state(blob, path.name)


def observe(run_dir: Path, updates: int, state_limit: int) -> Observation:
    """Everything the verdict needs from the artifacts, or ArtifactError."""
    if not run_dir.is_dir() or run_dir.is_symlink():
        raise ArtifactError("the run left no artifacts folder for this scenario")
    final = run_dir / "final"
    if final.is_symlink():
        raise ArtifactError("final/ is a link")
    return Observation(metrics=read_metrics(run_dir / "metrics.jsonl", updates),
                       state=read_state(final / "model.pt", state_limit))
