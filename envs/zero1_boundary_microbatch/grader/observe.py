"""Reading what the run phase left behind, as data from an adversary.

Every read is bounded and type-checked: files must be regular (links are not followed), within a
size limit, and of the documented shape. Tensors come only through
``torch.load(..., weights_only=True)`` of a zip checkpoint whose unpacked size is checked first.
Anything missing or malformed raises ``ArtifactError``, which the judge turns into a ``fail``
with the message as the reason.
"""
from __future__ import annotations

import io
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from artifacts import ArtifactError, check_zip, number, read_bounded  # the harness library

from scenario import Scenario

METRICS_LIMIT = 4 << 20
#: Layout version of the run kit's observer records (``kit/observe/step_observer.py``).
RECORD_FORMAT = 1
#: A checkpoint may unpack to at most this multiple of its file size limit.
UNPACK_RATIO = 2


@dataclass(frozen=True)
class StepRecord:
    """The fields of one ``metrics.jsonl`` record the judge uses (numbers or None)."""

    step: int
    step_time_s: float | None
    wall_time: float | None


@dataclass(frozen=True)
class Observation:
    """Metrics records, the saved fp32 model, and per rank the observer's flat fp32 partitions:
    weights before every step, the gradient every step applied, and the weights after the last."""

    metrics: list[StepRecord]
    final_state: dict[str, torch.Tensor]
    params: list[list[torch.Tensor]]
    grads: list[list[torch.Tensor]]
    finals: list[torch.Tensor]


def read_metrics(path: Path, steps: int) -> list[StepRecord]:
    """The ``metrics.jsonl`` records, which must be steps 0..steps-1 in order."""
    try:
        text = read_bounded(path, METRICS_LIMIT).decode("utf-8")
    except UnicodeDecodeError:
        raise ArtifactError("metrics.jsonl is not UTF-8 text") from None
    records = []
    for index, line in enumerate(ln for ln in text.splitlines() if ln.strip()):
        try:
            raw = json.loads(line)
        except (ValueError, RecursionError):
            raise ArtifactError(f"metrics.jsonl line {index + 1} is not JSON") from None
        step = raw.get("step") if isinstance(raw, dict) else None
        if isinstance(step, bool) or not isinstance(step, int):
            raise ArtifactError(f"metrics.jsonl line {index + 1}: no integer 'step'")
        records.append(StepRecord(step, number(raw.get("step_time_s")), number(raw.get("wall_time"))))
    if [r.step for r in records] != list(range(steps)):
        raise ArtifactError(f"metrics.jsonl does not hold steps 0..{steps - 1} in order")
    return records


def load_tensors(path: Path, limit: int) -> Any:
    """``torch.load(weights_only=True)`` of a bounded, size-checked zip checkpoint."""
    data = read_bounded(path, limit)
    check_zip(data, path.name, UNPACK_RATIO * limit)
    try:
        return torch.load(io.BytesIO(data), map_location="cpu", weights_only=True)
    except Exception as err:  # noqa: BLE001 - anything torch.load refuses is a malformed artifact
        raise ArtifactError(f"{path.name}: not loadable with weights_only ({type(err).__name__})") from None


def flat_f32(value: Any, what: str) -> torch.Tensor:
    """A 1-D float32 tensor, or ArtifactError."""
    if not isinstance(value, torch.Tensor) or value.dtype != torch.float32 or value.dim() != 1:
        raise ArtifactError(f"{what} is not a flat float32 tensor")
    return value


def read_rank(path: Path, sc: Scenario, rank: int) -> tuple[list[torch.Tensor], list[torch.Tensor], torch.Tensor]:
    """One rank's observer record: weights and gradients per step, final weights."""
    raw = load_tensors(path, sc.record_limit_bytes)
    if not isinstance(raw, dict) or raw.get("format") != RECORD_FORMAT or raw.get("rank") != rank:
        raise ArtifactError(f"{path.name}: not an observer record of rank {rank}")
    params, grads = raw.get("params"), raw.get("grads")
    if not isinstance(params, list) or not isinstance(grads, list) or len(params) != sc.steps or len(grads) != sc.steps:
        raise ArtifactError(f"{path.name}: does not hold {sc.steps} steps")
    p = [flat_f32(t, f"{path.name} step {k} weights") for k, t in enumerate(params)]
    g = [flat_f32(t, f"{path.name} step {k} gradient") for k, t in enumerate(grads)]
    final = flat_f32(raw.get("final"), f"{path.name} final weights")
    size = final.numel()
    if any(t.numel() != size for t in p + g):
        raise ArtifactError(f"{path.name}: partition sizes differ between steps")
    return p, g, final


def read_final(path: Path, sc: Scenario) -> dict[str, torch.Tensor]:
    """``final/model.pt``: the README's names and shapes, float32."""
    raw = load_tensors(path, sc.state_limit_bytes)
    if not isinstance(raw, dict):
        raise ArtifactError("final/model.pt is not a state dict")
    expected = dict(sc.shapes)
    if set(raw) != set(expected):
        raise ArtifactError(f"final/model.pt names differ from the README model ({sorted(map(str, raw))[:6]} ...)")
    out = {}
    for name, shape in expected.items():
        t = raw[name]
        if not isinstance(t, torch.Tensor) or t.dtype != torch.float32 or tuple(t.shape) != shape:
            raise ArtifactError(f"final/model.pt: {name} is not a float32 tensor of shape {shape}")
        out[name] = t
    return out


def observe(sc: Scenario, folder: Path) -> Observation:
    """Everything the judge reads for one scenario (raises ``ArtifactError``)."""
    records = [read_rank(folder / "observe" / f"rank{r}.pt", sc, r) for r in range(sc.devices)]
    if len({rec[2].numel() for rec in records}) != 1:
        raise ArtifactError("observer records: ranks hold partitions of different sizes")
    return Observation(
        metrics=read_metrics(folder / "metrics.jsonl", sc.steps),
        final_state=read_final(folder / "final" / "model.pt", sc),
        params=[rec[0] for rec in records],
        grads=[rec[1] for rec in records],
        finals=[rec[2] for rec in records],
    )
