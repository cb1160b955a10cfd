"""Judge-side readers of what a run left behind: JSON-lines logs, tensor files, observer records.

Every reader here is the bounded, type-checked reading the grader protocol asks for, built on
:mod:`artifacts`: regular files only (links not followed), a size limit, a closed shape. Tensor
files are zip checkpoints whose unpacked size is checked before ``torch.load(...,
weights_only=True)`` unpickles them; every tensor must be a dense floating-point CPU tensor.
Hugging Face weights (``model.safetensors``) are read with :func:`read_safetensors`. Anything
missing or malformed raises :class:`ArtifactError`, which the judge kit turns into a ``fail``
with the message as its reason. Needs torch (the case runtime has it).
"""

from __future__ import annotations

import io
import json
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

if __package__:  # imported as part of the package
    from .artifacts import ArtifactError, check_zip, number, read_bounded
else:  # imported from /harnesslib by a case's judge
    from artifacts import ArtifactError, check_zip, number, read_bounded  # type: ignore[no-redef,import-not-found,unused-ignore]

State = dict[str, torch.Tensor]
#: A tensor file may unpack to at most this multiple of its size limit.
UNPACK_RATIO = 2
JSONL_LIMIT = 4 << 20
MAX_RECORDS = 100_000


@dataclass(frozen=True)
class Step:
    """One record of a per-step log (``metrics.jsonl`` and the like): its index, the numbers the
    judge asked for (``None`` when missing or not a number) and the two timing fields the judge
    kit uses to split start-up from training (untrusted, never part of a verdict)."""

    index: int
    values: dict[str, float | None]
    step_time_s: float | None
    wall_time: float | None

    def __getitem__(self, key: str) -> float | None:
        return self.values[key]


def read_jsonl(path: Path, *, index: str, fields: Sequence[str], count: int, limit: int = JSONL_LIMIT) -> list[Step]:
    """The records of a JSON-lines log, which must be exactly indices ``0..count-1`` in order
    (``index`` names the integer field); ``fields`` are read as numbers."""
    try:
        text = read_bounded(path, limit).decode("utf-8")
    except UnicodeDecodeError:
        raise ArtifactError(f"{path.name} is not UTF-8 text") from None
    lines = [line for line in text.splitlines() if line.strip()]
    if len(lines) > MAX_RECORDS:
        raise ArtifactError(f"{path.name} has {len(lines)} records")
    steps = []
    for number_, line in enumerate(lines, start=1):
        try:
            raw = json.loads(line)
        except (ValueError, RecursionError):
            raise ArtifactError(f"{path.name} line {number_} is not JSON") from None
        if not isinstance(raw, dict):
            raise ArtifactError(f"{path.name} line {number_} is not a JSON object")
        at = raw.get(index)
        if isinstance(at, bool) or not isinstance(at, int):
            raise ArtifactError(f"{path.name} line {number_}: {index!r} is not an integer")
        values = {key: number(raw.get(key)) for key in fields}
        steps.append(Step(at, values, number(raw.get("step_time_s")), number(raw.get("wall_time"))))
    if [s.index for s in steps] != list(range(count)):
        raise ArtifactError(f"{path.name} covers {len(steps)} records, expected {index} 0..{count - 1} in order")
    return steps


def load_tensors(path: Path, limit: int) -> Any:
    """``torch.load(weights_only=True)`` of a zip checkpoint of at most ``limit`` bytes."""
    data = read_bounded(path, limit)
    check_zip(data, path.name, UNPACK_RATIO * limit)
    try:
        return torch.load(io.BytesIO(data), map_location="cpu", weights_only=True)
    except Exception as err:  # noqa: BLE001 - any refusal of the safe loader is a bad file
        raise ArtifactError(f"{path.name}: refused by torch.load(weights_only=True): {type(err).__name__}") from None


def tensor(value: Any, what: str, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """A dense floating-point CPU tensor, as ``dtype``."""
    if not isinstance(value, torch.Tensor):
        raise ArtifactError(f"{what} is not a tensor")
    if value.layout != torch.strided or not value.is_floating_point() or value.device.type != "cpu":
        raise ArtifactError(f"{what} is not a dense floating-point CPU tensor")
    return value.detach().to(dtype).contiguous()


def state_dict(
    value: Any, what: str, dtype: torch.dtype = torch.float32, skip: Callable[[str, Any], bool] | None = None
) -> State:
    """Parameter names to tensors (``skip(name, value)`` drops entries such as empty extra states)."""
    if not isinstance(value, dict):
        raise ArtifactError(f"{what} is not a dict of tensors")
    state: State = {}
    for key, item in value.items():
        if not isinstance(key, str):
            raise ArtifactError(f"{what}: a key is not a name")
        if skip is not None and skip(key, item):
            continue
        state[key] = tensor(item, f"{what}: {key[:80]}", dtype)
    return state


def read_state(path: Path, limit: int, *, key: str | None = None, dtype: torch.dtype = torch.float32,
               skip: Callable[[str, Any], bool] | None = None) -> State:  # fmt: skip
    """A saved state dict (``key``: the entry of the saved dict that holds it, e.g. ``"module"``)."""
    blob = load_tensors(path, limit)
    if key is not None:
        blob = blob.get(key) if isinstance(blob, dict) else None
        if blob is None:
            raise ArtifactError(f"{path.name}: no {key!r} state dict")
    return state_dict(blob, path.name, dtype, skip)


def read_rank_record(path: Path, rank: int, limit: int, *, fmt: int = 1) -> dict[str, Any]:
    """One rank's observer record (``rank_observer.RankObserver.write``): a dict whose ``format``
    and ``rank`` are the expected ones. Its content is the observer's; check it with
    :func:`states` and :func:`tensor`."""
    blob = load_tensors(path, limit)
    if not isinstance(blob, dict) or blob.get("format") != fmt or blob.get("rank") != rank:
        raise ArtifactError(f"{path.name}: not a format-{fmt} observer record of rank {rank}")
    return blob


def read_rank_records(folder: Path, ranks: int, limit: int, *, fmt: int = 1) -> list[dict[str, Any]]:
    """The observer records ``rank0.pt .. rank<ranks-1>.pt`` of ``folder``."""
    if folder.is_symlink() or not folder.is_dir():
        raise ArtifactError(f"{folder.name}/: no observer records")
    return [read_rank_record(folder / f"rank{rank}.pt", rank, limit, fmt=fmt) for rank in range(ranks)]


def states(value: Any, what: str, count: int, dtype: torch.dtype = torch.float32) -> list[State]:
    """A list of exactly ``count`` state dicts (one per step) from an observer record."""
    if not isinstance(value, list) or len(value) != count:
        found = len(value) if isinstance(value, list) else "no"
        raise ArtifactError(f"{what}: {found} recorded states, expected {count}")
    return [state_dict(item, f"{what} step {k}", dtype) for k, item in enumerate(value)]


def finite_or_inf(value: float | None) -> float:
    """A reported number for a comparison: missing or non-finite counts as infinitely wrong."""
    return value if value is not None and math.isfinite(value) else math.inf


#: A safetensors header (names, dtypes, shapes, offsets) is small; one past this is refused.
SAFETENSORS_HEADER_LIMIT = 1 << 20


def read_safetensors(path: Path, limit: int, dtype: torch.dtype | None = torch.float32) -> State:
    """Every tensor of a safetensors file (Hugging Face's ``save_pretrained`` format) of at most
    ``limit`` bytes, as dense floating-point CPU tensors (``dtype``; ``None`` keeps each one's
    own, for bitwise comparisons). The header's declared size is checked before parsing; the
    format holds no code, so nothing is unpickled."""
    from safetensors.torch import load  # noqa: PLC0415 - only judges that read Hugging Face weights need it

    data = read_bounded(path, limit)
    header = int.from_bytes(data[:8], "little") if len(data) >= 8 else -1
    if not 0 < header <= min(SAFETENSORS_HEADER_LIMIT, len(data) - 8):
        raise ArtifactError(f"{path.name}: no valid safetensors header")
    try:
        tensors = load(data)
    except Exception as err:  # noqa: BLE001 - whatever the parser refuses is a bad file
        raise ArtifactError(f"{path.name}: not a safetensors file ({type(err).__name__})") from None
    state: State = {}
    for name, value in tensors.items():
        state[name] = tensor(value, f"{path.name}: {name[:80]}", value.dtype if dtype is None else dtype)
    return state


#: Entries megatron-core layers save beside their parameters (``None`` when they hold nothing).
EXTRA_STATE_SUFFIX = "._extra_state"


def read_model_states(folder: Path, ranks: int, limit: int, *, dtype: torch.dtype = torch.float32) -> list[State]:
    """The model state of every model-parallel rank of a DeepSpeed checkpoint tag folder:
    ``mp_rank_00_model_states.pt`` .. ``mp_rank_<ranks-1>_...``, each file's ``"module"`` state
    dict (at most ``limit`` bytes a file; megatron-core's empty ``._extra_state`` entries are
    skipped, anything else must be a dense floating-point CPU tensor)."""
    if folder.is_symlink() or not folder.is_dir():
        raise ArtifactError(f"{folder.name}/: no checkpoint folder")

    def empty_extra(name: str, value: Any) -> bool:
        return name.endswith(EXTRA_STATE_SUFFIX) and value is None

    return [
        read_state(folder / f"mp_rank_{rank:02d}_model_states.pt", limit, key="module", dtype=dtype, skip=empty_extra)
        for rank in range(ranks)
    ]
