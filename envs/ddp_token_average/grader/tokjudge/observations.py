"""The observer's per-rank records and the saved model, validated against the case architecture.

Records come from inside the revision's processes (``kit/observe/update_observer.py``), so they
are parsed like any untrusted input: the weights-only unpickler, then every field checked for
type, every tensor for dtype, shape and finiteness, every parameter name matched one-to-one to
the case architecture. What passes is keyed by the architecture's own parameter names.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from tokjudge.artifacts import (
    TENSOR_FILE_LIMIT,
    ArtifactMalformed,
    ArtifactMissing,
    load_safetensors,
    load_torch_record,
)
from tokkit import layout
from tokkit.scenario import Scenario

Tensors = dict[str, torch.Tensor]
Grads = dict[str, torch.Tensor | None]

RECORD_FORMAT = 2
#: Bounds on the consumed rows one update may report (a scenario's update consumes at most a
#: few dozen rows of at most 128 ids).
MAX_ROWS_PER_UPDATE = 4096
MAX_ROW_LENGTH = 4096
#: Transformers saves GPTNeoXForCausalLM's ``lm_head`` under its original checkpoint name
#: (``conversion_mapping.py``: ``^embed_out.`` <-> ``lm_head.``); the judge reads both.
CHECKPOINT_RENAMES = ((re.compile(r"(^|\.)embed_out\."), r"\1lm_head."),)


@dataclass(frozen=True)
class UpdateRecord:
    """One optimizer update as one rank saw it: parameters and gradients just before the step."""

    params: Tensors
    grads: Grads
    rows: list[list[int]]
    forwards: int


@dataclass(frozen=True)
class RankRecord:
    """Everything one rank recorded."""

    rank: int
    updates: list[UpdateRecord]
    final_params: Tensors
    t_first_forward: float | None
    t_done: float | None


@dataclass(frozen=True)
class Architecture:
    """Parameter names and shapes of the case's model, in the model's order."""

    shapes: dict[str, tuple[int, ...]]

    @property
    def numel(self) -> int:
        """Number of parameters (scalars) of the model."""
        return sum(math.prod(shape) for shape in self.shapes.values())

    def match(self, recorded: Iterable[str], allow_extra: bool = False) -> dict[str, str]:
        """Map each architecture name to the one recorded name equal to it or ending in ``.name``."""
        names = list(recorded)
        mapping: dict[str, str] = {}
        for name in self.shapes:
            hits = [r for r in names if r == name or r.endswith("." + name)]
            if len(hits) != 1:
                raise ArtifactMalformed(f"parameter {name}: {len(hits)} recorded matches {hits[:3]}")
            mapping[name] = hits[0]
        if not allow_extra and len(names) != len(mapping):
            extra = sorted(set(names) - set(mapping.values()))[:3]
            raise ArtifactMalformed(f"the model has parameters the case architecture lacks: {extra}")
        return mapping

    def tensors(self, raw: Any, what: str, allow_none: bool = False, allow_extra: bool = False) -> dict[str, Any]:
        """A name -> tensor dict, renamed to the architecture and checked tensor by tensor."""
        if not isinstance(raw, dict) or not all(isinstance(k, str) for k in raw):
            raise ArtifactMalformed(f"{what} is not a dict of named tensors")
        mapping = self.match(raw, allow_extra)
        return {name: self._checked(raw[mapping[name]], name, f"{what}[{name}]", allow_none) for name in self.shapes}

    def _checked(self, value: Any, name: str, what: str, allow_none: bool) -> torch.Tensor | None:
        if value is None and allow_none:
            return None
        if not isinstance(value, torch.Tensor) or value.layout != torch.strided:
            raise ArtifactMalformed(f"{what} is not a dense tensor")
        if value.dtype != torch.float32:
            raise ArtifactMalformed(f"{what} is {value.dtype}; the case trains in float32")
        if tuple(value.shape) != self.shapes[name]:
            raise ArtifactMalformed(f"{what} has shape {tuple(value.shape)}, expected {self.shapes[name]}")
        if not bool(torch.isfinite(value).all()):
            raise ArtifactMalformed(f"{what} holds non-finite values")
        return value.detach().clone()


def tensor_file_limit(arch: Architecture, steps: int) -> int:
    """Largest rank record or saved model the judge opens for ``arch``: TENSOR_FILE_LIMIT, or twice
    the float32 tensors of a record of ``steps`` updates (parameters and gradients per update,
    final parameters) when that is more."""
    return max(TENSOR_FILE_LIMIT, 2 * 4 * arch.numel * (2 * steps + 1))


def _rows(raw: Any, what: str) -> list[list[int]]:
    if not isinstance(raw, list) or len(raw) > MAX_ROWS_PER_UPDATE:
        raise ArtifactMalformed(f"{what} is not a list of at most {MAX_ROWS_PER_UPDATE} rows")
    for row in raw:
        if not isinstance(row, list) or len(row) > MAX_ROW_LENGTH:
            raise ArtifactMalformed(f"{what} holds a row that is not a list of at most {MAX_ROW_LENGTH} ids")
        if not all(isinstance(i, int) and not isinstance(i, bool) for i in row):
            raise ArtifactMalformed(f"{what} holds a row with non-integer ids")
    return raw


def _time(raw: Any) -> float | None:
    return float(raw) if isinstance(raw, (int, float)) and not isinstance(raw, bool) and math.isfinite(raw) else None


def _update(raw: Any, arch: Architecture, what: str) -> UpdateRecord:
    if not isinstance(raw, dict):
        raise ArtifactMalformed(f"{what} is not a dict")
    forwards = raw.get("forwards")
    if isinstance(forwards, bool) or not isinstance(forwards, int):
        raise ArtifactMalformed(f"{what}.forwards is not an integer")
    return UpdateRecord(
        params=arch.tensors(raw.get("params"), f"{what}.params"),
        grads=arch.tensors(raw.get("grads"), f"{what}.grads", allow_none=True),
        rows=_rows(raw.get("rows"), f"{what}.rows"),
        forwards=forwards,
    )


def parse_rank_record(raw: Any, rank: int, scenario: Scenario, arch: Architecture) -> RankRecord:
    """Validate one rank's record: format, identity, exactly ``scenario.steps`` updates."""
    what = f"rank {rank} record"
    if not isinstance(raw, dict) or raw.get("format") != RECORD_FORMAT:
        raise ArtifactMalformed(f"{what} is not an observer record of format {RECORD_FORMAT}")
    if raw.get("rank") != rank or raw.get("world_size") != scenario.world_size:
        claimed = f"rank {raw.get('rank')!r} of {raw.get('world_size')!r}"
        raise ArtifactMalformed(f"{what} claims {claimed}, expected {rank} of {scenario.world_size}")
    updates = raw.get("updates")
    if not isinstance(updates, list) or len(updates) != scenario.steps:
        count = len(updates) if isinstance(updates, list) else "no"
        raise ArtifactMalformed(f"{what} holds {count} updates, expected {scenario.steps}")
    return RankRecord(
        rank=rank,
        updates=[_update(u, arch, f"{what}, update {i + 1}") for i, u in enumerate(updates)],
        final_params=arch.tensors(raw.get("final_params"), f"{what}.final_params"),
        t_first_forward=_time(raw.get("t_first_forward")),
        t_done=_time(raw.get("t_done")),
    )


def load_rank_records(folder: Path, scenario: Scenario, arch: Architecture) -> list[RankRecord]:
    """Every rank's record, in rank order. Missing ranks raise ArtifactMissing (named)."""
    records_dir = folder / layout.RECORDS_DIR
    paths = [records_dir / layout.rank_record_name(r) for r in range(scenario.world_size)]
    missing = [r for r, path in enumerate(paths) if not path.is_file() or path.is_symlink()]
    if missing:
        raise ArtifactMissing(f"no record from ranks {missing}")
    limit = tensor_file_limit(arch, scenario.steps)
    return [parse_rank_record(load_torch_record(path, limit), r, scenario, arch) for r, path in enumerate(paths)]


def canonical_checkpoint_name(name: str) -> str:
    """A saved tensor's name as the model names the parameter."""
    for pattern, replacement in CHECKPOINT_RENAMES:
        name = pattern.sub(replacement, name)
    return name


def load_saved_model(folder: Path, arch: Architecture) -> Tensors:
    """The parameters the pipeline saved (``model.safetensors``), keyed by architecture name."""
    path = folder / layout.MODEL_FILE
    if not path.is_file():
        raise ArtifactMissing(f"no {layout.MODEL_FILE} in the output directory (trainer.save_model())")
    raw = load_safetensors(path, tensor_file_limit(arch, 0))
    renamed = {canonical_checkpoint_name(k): v for k, v in raw.items()}
    if len(renamed) != len(raw):
        raise ArtifactMalformed(f"{layout.MODEL_FILE} names a parameter twice (embed_out and lm_head)")
    return arch.tensors(renamed, layout.MODEL_FILE, allow_extra=True)
