"""Bounded, typed reading of what the run phase left (adversarial data) and of oracle files.

Every reader opens without following a link and without blocking on a FIFO, refuses anything
that is not a regular file or is larger than its limit, and turns every surprise into an
ArtifactError (the judge's `fail`, with the message as the reason). Tensor files are loaded
with `torch.load(weights_only=True)` after a check that they are plain, uncompressed torch zip
archives of a bounded size; weights with safetensors; JSON with explicit type checks.
"""
from __future__ import annotations

import io
import json
import math
import os
import stat
import zipfile
from pathlib import Path
from typing import Any

import torch

#: A record's pickle holds names, digests and small containers; tensors are stored beside it.
PICKLE_LIMIT_BYTES = 8 << 20
MAX_ZIP_ENTRIES = 20_000
#: safetensors header (names, dtypes, shapes, offsets of 76 tensors: a few kB).
HEADER_LIMIT_BYTES = 1 << 20


class ArtifactError(Exception):
    """A file the run phase should have left is missing, too large or malformed."""


def read_bounded(path: Path, limit: int) -> bytes:
    """The bytes of the regular file `path`, at most `limit` of them."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except FileNotFoundError:
        raise ArtifactError(f"{path.name} is missing") from None
    except OSError as exc:
        raise ArtifactError(f"{path.name} cannot be opened ({exc.strerror})") from None
    with os.fdopen(fd, "rb") as f:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise ArtifactError(f"{path.name} is not a regular file")
        if info.st_size > limit:
            raise ArtifactError(f"{path.name} is {info.st_size} bytes, over the limit of {limit}")
        data = f.read(limit + 1)
    if len(data) > limit:
        raise ArtifactError(f"{path.name} is over the limit of {limit} bytes")
    return data


def read_tail(path: Path, limit: int) -> str:
    """The last `limit` bytes of a text file as text; empty when it is missing or unreadable."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return ""
    with os.fdopen(fd, "rb") as f:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return ""
        f.seek(max(info.st_size - limit, 0))
        return f.read(limit).decode("utf-8", "replace")


def read_json_object(path: Path, limit: int) -> dict[str, Any]:
    """A JSON object from `path` (ArtifactError if missing, too large, not JSON or not an object)."""
    data = read_bounded(path, limit)
    try:
        value = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise ArtifactError(f"{path.name} is not JSON ({type(exc).__name__})") from None
    if not isinstance(value, dict):
        raise ArtifactError(f"{path.name} holds a {type(value).__name__}, not an object")
    return value


def finite_number(value: Any) -> float | None:
    """`value` as a float if it is a finite int or float (never a bool), else None."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) else None


def _check_torch_zip(data: bytes, name: str, limit: int) -> None:
    """Refuse anything but a plain torch zip archive: stored entries, bounded sizes."""
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
        entries = archive.infolist()
    except (zipfile.BadZipFile, ValueError, OSError) as exc:
        raise ArtifactError(f"{name} is not a torch zip archive ({exc})") from None
    if len(entries) > MAX_ZIP_ENTRIES:
        raise ArtifactError(f"{name} has {len(entries)} entries")
    if any(e.compress_type != zipfile.ZIP_STORED for e in entries):
        raise ArtifactError(f"{name} has compressed entries (torch.save never writes them)")
    if sum(e.file_size for e in entries) > limit:
        raise ArtifactError(f"{name} unpacks to more than {limit} bytes")
    pickles = [e for e in entries if e.filename.endswith("/data.pkl")]
    if len(pickles) != 1 or pickles[0].file_size > PICKLE_LIMIT_BYTES:
        raise ArtifactError(f"{name} does not have one data.pkl of at most {PICKLE_LIMIT_BYTES} bytes")


def load_torch(path: Path, limit: int) -> Any:
    """What torch.save wrote to `path`, loaded with weights_only=True (tensors and containers)."""
    data = read_bounded(path, limit)
    _check_torch_zip(data, path.name, limit)
    try:
        return torch.load(io.BytesIO(data), map_location="cpu", weights_only=True)
    except Exception as exc:  # noqa: BLE001 - anything the unpickler refuses is malformed data
        raise ArtifactError(f"{path.name} cannot be loaded as weights ({type(exc).__name__}: {exc})"[:400]) from None


def load_safetensors(path: Path, limit: int) -> dict[str, torch.Tensor]:
    """Every tensor of a safetensors file."""
    from safetensors.torch import load

    data = read_bounded(path, limit)
    header = int.from_bytes(data[:8], "little") if len(data) >= 8 else -1
    if not 0 < header <= min(HEADER_LIMIT_BYTES, len(data) - 8):
        raise ArtifactError(f"{path.name} has no valid safetensors header")
    try:
        tensors = load(data)
    except Exception as exc:  # noqa: BLE001 - a malformed file, whatever the parser says
        raise ArtifactError(f"{path.name} is not a safetensors file ({type(exc).__name__}: {exc})"[:400]) from None
    return dict(tensors)
