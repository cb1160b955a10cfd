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
#: A file may unpack to at most this multiple of its size limit.
UNPACK_RATIO = 2
JSON_LIMIT = 64 << 10
LOG_LIMIT = 256 << 10
MAX_RECORDS = 100_000
#: Layout version of the run kit's observer records (``kit/observe/step_observer.py``).
RECORD_FORMAT = 1


@dataclass(frozen=True)
class StepRecord:
    """The fields of one ``metrics.jsonl`` record the judge uses (numbers or None)."""

    step: int
    loss: float | None
    step_time_s: float | None
    wall_time: float | None


@dataclass(frozen=True)
class RankRecord:
    """One rank's observer record: the weights and gradients before every step, and the
    weights after the last."""

    params: list[State]
    grads: list[State]
    final: State


@dataclass(frozen=True)
class Observation:
    """Per-step metrics, the checkpoint rank 0 saved, and every rank's observer record."""

    metrics: list[StepRecord]
    saved: State
    ranks: list[RankRecord]


def _record(line: str, index: int) -> StepRecord:
    """One metrics line, checked against the README's record shape."""
    try:
        raw = json.loads(line)
    except (ValueError, RecursionError):
        raise ArtifactError(f"metrics.jsonl line {index + 1} is not JSON") from None
    if not isinstance(raw, dict):
        raise ArtifactError(f"metrics.jsonl line {index + 1} is not a JSON object")
    step = raw.get("step")
    if isinstance(step, bool) or not isinstance(step, int):
        raise ArtifactError(f"metrics.jsonl line {index + 1}: 'step' is not an integer")
    return StepRecord(step=step, loss=number(raw.get("loss")), step_time_s=number(raw.get("step_time_s")),
                      wall_time=number(raw.get("wall_time")))


def read_metrics(path: Path, steps: int) -> list[StepRecord]:
    """The ``metrics.jsonl`` records, which must be steps 0..steps-1 in order."""
    try:
        text = read_bounded(path, METRICS_LIMIT).decode("utf-8")
    except UnicodeDecodeError:
        raise ArtifactError("metrics.jsonl is not UTF-8 text") from None
    lines = [ln for ln in text.splitlines() if ln.strip()]
    if len(lines) > MAX_RECORDS:
        raise ArtifactError(f"metrics.jsonl has {len(lines)} records")
    records = [_record(ln, i) for i, ln in enumerate(lines)]
    if [r.step for r in records] != list(range(steps)):
        raise ArtifactError(f"metrics cover {len(records)} records, expected steps 0..{steps - 1} in order")
    return records


def _load(path: Path, limit: int) -> Any:
    """A torch zip file through the safe loader, after size and unpacked-size checks."""
    data = read_bounded(path, limit)
    check_zip(data, path.name, UNPACK_RATIO * limit)
    try:
        return torch.load(io.BytesIO(data), map_location="cpu", weights_only=True)
    except Exception as err:  # noqa: BLE001 - any refusal of the safe loader is a bad file
        raise ArtifactError(f"{path.name}: refused by torch.load(weights_only=True): "
                            f"{type(err).__name__}") from None


def tensor_dict(value: Any, what: str) -> State:
    """A dict of names to dense floating CPU tensors, as float32."""
    if not isinstance(value, dict):
        raise ArtifactError(f"{what} is not a dict of tensors")
    state: State = {}
    for key, tensor in value.items():
        if not isinstance(key, str) or not isinstance(tensor, torch.Tensor):
            raise ArtifactError(f"{what}: entry {str(key)[:80]!r} is not a named tensor")
        if tensor.layout != torch.strided or not tensor.is_floating_point() or tensor.device.type != "cpu":
            raise ArtifactError(f"{what}: {key[:80]} is not a dense floating-point CPU tensor")
        state[key] = tensor.detach().to(torch.float32).contiguous()
    return state


def read_record(path: Path, rank: int, world: int, steps: int, limit: int) -> RankRecord:
    """One rank's observer record: exactly ``steps`` parameter and gradient states."""
    blob = _load(path, limit)
    if (not isinstance(blob, dict) or blob.get("format") != RECORD_FORMAT or blob.get("rank") != rank
            or blob.get("world") != world):
        raise ArtifactError(f"{path.name}: not a format-{RECORD_FORMAT} observer record of rank {rank} of {world}")
    params, grads = blob.get("params"), blob.get("grads")
    for what, value in (("parameter", params), ("gradient", grads)):
        if not isinstance(value, list) or len(value) != steps:
            count = len(value) if isinstance(value, list) else "no"
            raise ArtifactError(f"{path.name}: {count} recorded {what} states, expected {steps}")
    assert isinstance(params, list) and isinstance(grads, list)
    return RankRecord(params=[tensor_dict(s, f"{path.name} params {k}") for k, s in enumerate(params)],
                      grads=[tensor_dict(s, f"{path.name} grads {k}") for k, s in enumerate(grads)],
                      final=tensor_dict(blob.get("final"), f"{path.name} final"))


def observe(run_dir: Path, steps: int, world: int, state_limit: int, record_limit: int) -> Observation:
    """Everything the verdict needs from the artifacts, or ArtifactError."""
    if not run_dir.is_dir() or run_dir.is_symlink():
        raise ArtifactError("the run left no artifacts folder for this scenario")
    metrics = read_metrics(run_dir / "metrics.jsonl", steps)
    saved = tensor_dict(_load(run_dir / "checkpoints" / "final.pt", state_limit), "final.pt")
    ranks = [read_record(run_dir / "observe" / f"rank{r}.pt", r, world, steps, record_limit) for r in range(world)]
    return Observation(metrics=metrics, saved=saved, ranks=ranks)
