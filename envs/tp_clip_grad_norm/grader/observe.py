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
import math
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

# Megatron layout documented in the workspace README: column-parallel fc1 split along
# output rows, row-parallel fc2 weight along input columns; everything else replicated.
PARTITION_DIMS = {"mlp.fc1.weight": 0, "mlp.fc1.bias": 0, "mlp.fc2.weight": 1}
#: State-dict entries of megatron-core layers that are not parameters (saved as None).
EXTRA_STATE = "._extra_state"


@dataclass(frozen=True)
class StepRecord:
    """The fields of one ``metrics.jsonl`` record the judge uses (numbers or None)."""

    step: int
    loss: float | None
    grad_norm: float | None
    step_time_s: float | None
    wall_time: float | None


@dataclass(frozen=True)
class Observation:
    """Per-step metrics records and each tensor-parallel rank's final parameters."""

    metrics: list[StepRecord]
    rank_states: list[State]


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
    return StepRecord(step=step, loss=number(raw.get("loss")), grad_norm=number(raw.get("grad_norm")),
                      step_time_s=number(raw.get("step_time_s")), wall_time=number(raw.get("wall_time")))


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


def _module_state(blob: Any, name: str) -> State:
    """The ``"module"`` entry: parameter names to dense floating CPU tensors (empty extra
    states skipped)."""
    module = blob.get("module") if isinstance(blob, dict) else None
    if not isinstance(module, dict):
        raise ArtifactError(f"{name}: no 'module' state dict")
    state: State = {}
    for key, value in module.items():
        if isinstance(key, str) and key.endswith(EXTRA_STATE) and value is None:
            continue  # megatron-core layers save an empty extra state beside their parameters
        if not isinstance(key, str) or not isinstance(value, torch.Tensor):
            raise ArtifactError(f"{name}: module entry {str(key)[:80]!r} is not a named tensor")
        if value.layout != torch.strided or not value.is_floating_point() or value.device.type != "cpu":
            raise ArtifactError(f"{name}: {key[:80]} is not a dense floating-point CPU tensor")
        state[key] = value.detach().to(torch.float32).contiguous()
    return state


def read_rank_state(path: Path, limit: int) -> State:
    """One rank's parameters from ``mp_rank_XX_model_states.pt`` (at most ``limit`` bytes)."""
    data = read_bounded(path, limit)
    check_zip(data, path.name, STATE_UNPACK_RATIO * limit)
    try:
        blob = torch.load(io.BytesIO(data), map_location="cpu", weights_only=True)
    except Exception as err:  # noqa: BLE001 - any refusal of the safe loader is a bad file
        raise ArtifactError(f"{path.name}: refused by torch.load(weights_only=True): "
                            f"{type(err).__name__}") from None
    return _module_state(blob, path.name)


def read_rank_states(ckpt_dir: Path, tp: int, limit: int) -> list[State]:
    """Parameters of every rank 0..tp-1."""
    return [read_rank_state(ckpt_dir / f"mp_rank_{rank:02d}_model_states.pt", limit) for rank in range(tp)]


def observe(run_dir: Path, steps: int, tp: int, state_limit: int) -> Observation:
    """Everything the verdict needs from the artifacts, or ArtifactError."""
    if not run_dir.is_dir() or run_dir.is_symlink():
        raise ArtifactError("the run left no artifacts folder for this scenario")
    return Observation(metrics=read_metrics(run_dir / "metrics.jsonl", steps),
                       rank_states=read_rank_states(run_dir / "checkpoints" / "final", tp, state_limit))


def partition_dim(name: str) -> int | None:
    """Split dimension of a parameter, or None if every rank holds a full copy."""
    return next((d for sfx, d in PARTITION_DIMS.items() if name.endswith(sfx)), None)


def shard_shape(name: str, full: torch.Size, tp: int) -> tuple[int, ...]:
    """The shape rank r's part of a full parameter has under the README layout."""
    dim = partition_dim(name)
    shape = list(full)
    if dim is not None:
        shape[dim] //= tp
    return tuple(shape)


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
            diff = (st[name] - ref).abs().max().item() if st[name].shape == ref.shape else math.inf
            if not diff <= worst:  # NaN counts as the worst
                worst, where = diff if diff == diff else math.inf, name
    return worst, where
