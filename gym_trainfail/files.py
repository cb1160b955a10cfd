"""Small file helpers shared across the package: bounded JSON reads, atomic JSON writes, patches.

They live low (no import of the grader, the env or the batch code), so anything may use them.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from gym_trainfail.errors import GradingError
from gym_trainfail.hashing import walk_tree


def read_json_object(path: Path, max_bytes: int = 8 << 20) -> dict[str, Any] | None:
    """The JSON object in ``path``, or ``None`` when it is absent, not a regular file, larger
    than ``max_bytes``, unreadable or not an object. Never blocks on a FIFO, never follows a link."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW)
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size > max_bytes:
            return None
        with os.fdopen(fd, "rb", closefd=False) as handle:
            raw = handle.read(max_bytes + 1)
    except OSError:
        return None
    finally:
        os.close(fd)
    try:
        data = json.loads(raw)
    except (ValueError, RecursionError):
        return None
    return data if isinstance(data, dict) else None


def write_json(path: Path, data: Any) -> None:
    """Write JSON atomically (temp file, then rename)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    partial.write_text(json.dumps(data, indent=2, sort_keys=True, default=str))
    os.replace(partial, path)


def apply_patch(workspace: Path, patch: Path) -> None:
    """Apply a unified diff (``a/…``/``b/…`` paths) to ``workspace`` in place."""
    result = subprocess.run(
        [
            "patch",
            "-p1",
            "--forward",
            "--batch",
            "--no-backup-if-mismatch",
            "-d",
            str(workspace),
            "-i",
            str(patch.resolve()),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    if result.returncode != 0:
        raise GradingError(f"{patch} does not apply to {workspace}: {result.stdout.strip()} {result.stderr.strip()}")
    for relative, full, _ in walk_tree(workspace):
        if relative.endswith(".orig"):
            full.unlink(missing_ok=True)


def copy_tree(source: Path, target: Path, *, exclude: Iterable[str] = ()) -> None:
    """Copy the regular files (with their modes) and symlinks (as links) under ``source`` into
    ``target``, skipping ``exclude`` (glob patterns) and special files.

    The walk is iterative and bounded like every tree walk
    (:func:`~gym_trainfail.hashing.walk_tree`): a tree nested deeper than the bound raises
    :class:`~gym_trainfail.hashing.TreeTooDeepError` instead of exhausting the stack, as
    ``shutil.copytree`` would. Empty folders are not copied (snapshots hold none either)."""
    target.mkdir(parents=True, exist_ok=True)
    for relative, full, info in walk_tree(source, exclude=exclude):
        dest = target / relative
        dest.parent.mkdir(parents=True, exist_ok=True)
        if stat.S_ISLNK(info.st_mode):
            os.symlink(os.readlink(full), dest)
        elif stat.S_ISREG(info.st_mode):
            shutil.copy2(full, dest, follow_symlinks=False)


def remove_tree(path: Path) -> None:
    """Remove ``path`` and everything under it, however deep (``rm -rf``, which does not recurse
    on the stack as ``shutil.rmtree`` does), staying on its filesystem; absent is fine."""
    subprocess.run(["rm", "-rf", "--one-file-system", "--", str(path)], check=False, capture_output=True)
