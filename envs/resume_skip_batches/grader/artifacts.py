"""Bounded, type-checked reads of a run's artifacts (adversarial data: never unpickled)."""
from __future__ import annotations

import json
import os
import stat
import struct
import zipfile
from pathlib import Path
from typing import Any

import torch

HEADER = struct.Struct("<ii")
MAX_ROWS_PER_FORWARD = 1 << 16


class ArtifactError(Exception):
    """An artifact is missing, too large, a link or malformed (the revision's doing)."""


def read_bytes(path: Path, limit: int) -> bytes:
    """A regular file's bytes (links not followed), at most ``limit``."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as err:
        raise ArtifactError(f"{path.parent.name}/{path.name}: {err.strerror}") from err
    with os.fdopen(fd, "rb") as fh:
        info = os.fstat(fh.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise ArtifactError(f"{path.name}: not a regular file")
        if info.st_size > limit:
            raise ArtifactError(f"{path.name}: {info.st_size} bytes, over the {limit}-byte limit")
        return fh.read(limit + 1)[:limit]


def read_json_object(path: Path, limit: int = 1 << 20) -> dict[str, Any]:
    """A JSON object from a bounded regular file."""
    try:
        raw = json.loads(read_bytes(path, limit).decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as err:
        raise ArtifactError(f"{path.name}: not JSON ({err})") from err
    if not isinstance(raw, dict):
        raise ArtifactError(f"{path.name}: not a JSON object")
    return raw


def read_tail(path: Path, limit: int = 200_000) -> str:
    """A log's text, or '' if it is unusable."""
    try:
        return read_bytes(path, limit).decode("utf-8", "replace")
    except ArtifactError:
        return ""


def read_state(path: Path, limit: int, shapes: dict[str, tuple[int, ...]]) -> dict[str, torch.Tensor]:
    """A saved state dict with exactly the README's tensors and shapes, as float64."""
    read_bytes(path, limit)  # size, type and link checks before torch opens it
    try:
        with zipfile.ZipFile(path) as archive:
            if sum(i.file_size for i in archive.infolist()) > 4 * limit:
                raise ArtifactError(f"{path.name}: unpacks to more than {4 * limit} bytes")
        state = torch.load(path, map_location="cpu", weights_only=True)
    except ArtifactError:
        raise
    except Exception as err:  # noqa: BLE001 - any unreadable file is the revision's doing
        raise ArtifactError(f"{path.parent.name}/{path.name}: unreadable ({type(err).__name__}: {str(err)[:120]})") from err
    if not isinstance(state, dict) or set(state) != set(shapes):
        keys = sorted(map(str, state)) if isinstance(state, dict) else type(state).__name__
        raise ArtifactError(f"{path.parent.name}/{path.name}: tensors {keys}, expected {sorted(shapes)}")
    out = {}
    for name, shape in shapes.items():
        value = state[name]
        if not isinstance(value, torch.Tensor) or tuple(value.shape) != shape or not value.is_floating_point():
            raise ArtifactError(f"{path.parent.name}/{path.name}: {name} is not a float tensor of shape {shape}")
        out[name] = value.detach().double()
        if not torch.isfinite(out[name]).all():
            raise ArtifactError(f"{path.parent.name}/{path.name}: {name} holds non-finite values")
    return out


def read_forwards(path: Path, limit: int, columns: int, row_index: dict[bytes, int]) -> list[list[int]]:
    """The observer's record of one rank and launch: per forward, the table rows it consumed."""
    data = read_bytes(path, limit)
    forwards: list[list[int]] = []
    pos = 0
    while pos < len(data):
        if pos + HEADER.size > len(data):
            raise ArtifactError(f"{path.name}: truncated header at byte {pos}")
        rows, cols = HEADER.unpack_from(data, pos)
        pos += HEADER.size
        if cols != columns or not 0 < rows <= MAX_ROWS_PER_FORWARD:
            raise ArtifactError(f"{path.name}: a forward of shape ({rows}, {cols}); the table has {columns} columns")
        width = 4 * cols
        if pos + rows * width > len(data):
            raise ArtifactError(f"{path.name}: truncated forward at byte {pos}")
        indices = []
        for r in range(rows):
            index = row_index.get(data[pos + r * width:pos + (r + 1) * width])
            if index is None:
                raise ArtifactError(f"{path.name}: forward {len(forwards)} consumed a row that is not in the table")
            indices.append(index)
        pos += rows * width
        forwards.append(indices)
    return forwards


def row_index(features: torch.Tensor) -> dict[bytes, int]:
    """Each table row's float32 little-endian bytes -> its index (rows are distinct draws)."""
    raw = features.float().contiguous().numpy().astype("<f4")
    return {raw[i].tobytes(): i for i in range(raw.shape[0])}
