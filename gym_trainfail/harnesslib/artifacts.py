"""Reading what a run phase left behind, as data from an adversary (judges and run kits).

Every read is bounded and type-checked: a file must be regular (links are not followed) and
within a size limit; JSON must be an object; a torch zip checkpoint must unpack to a bounded
size before anyone unpickles it. Anything missing or malformed raises :class:`ArtifactError`,
which a judge turns into a ``fail`` with the message as the reason. Standard library only.
"""

from __future__ import annotations

import io
import json
import os
import stat
import zipfile
from pathlib import Path
from typing import Any

#: Default bounds: a small JSON record, and how much of a log a judge quotes from.
JSON_LIMIT = 64 << 10
LOG_LIMIT = 256 << 10


class ArtifactError(Exception):
    """An artifact is missing, too large or not what the case's README documents."""


def read_bounded(path: Path, limit: int) -> bytes:
    """The bytes of a regular file of at most ``limit`` bytes (links not followed)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as err:
        raise ArtifactError(f"{path.name}: {err.strerror or 'cannot open'}") from None
    with os.fdopen(fd, "rb") as fh:
        info = os.fstat(fh.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise ArtifactError(f"{path.name}: not a regular file")
        if info.st_size > limit:
            raise ArtifactError(f"{path.name}: {info.st_size} bytes, over the {limit}-byte limit")
        data = fh.read(limit + 1)
    if len(data) > limit:
        raise ArtifactError(f"{path.name}: over the {limit}-byte limit")
    return data


def read_tail(path: Path, limit: int = LOG_LIMIT) -> str:
    """The last ``limit`` bytes of a regular file as text; empty if there is none."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return ""
    with os.fdopen(fd, "rb") as fh:
        if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
            return ""
        size = fh.seek(0, os.SEEK_END)
        fh.seek(max(0, size - limit))
        return fh.read(limit).decode("utf-8", errors="replace")


def read_json_object(path: Path, limit: int = JSON_LIMIT) -> dict[str, Any]:
    """A JSON object from a bounded file."""
    try:
        value = json.loads(read_bounded(path, limit).decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as err:
        raise ArtifactError(f"{path.name}: not JSON ({type(err).__name__})") from None
    if not isinstance(value, dict):
        raise ArtifactError(f"{path.name}: not a JSON object")
    return value


def number(value: Any) -> float | None:
    """A JSON number as float (NaN and infinities kept); anything else (bool too) is None."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def integer(value: Any) -> int | None:
    """A JSON integer (not a bool), or None."""
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def check_zip(data: bytes, name: str, limit: int) -> None:
    """Refuse ``data`` unless it is a zip archive (torch's checkpoint format) whose members
    unpack to at most ``limit`` bytes: the guard against a decompression bomb, checked before
    the archive is handed to ``torch.load``."""
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            unpacked = sum(info.file_size for info in archive.infolist())
    except (zipfile.BadZipFile, ValueError, OSError):
        raise ArtifactError(f"{name}: not a torch zip checkpoint") from None
    if unpacked > limit:
        raise ArtifactError(f"{name}: unpacks to {unpacked} bytes")
