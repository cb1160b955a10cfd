"""Content digests of files and directory trees.

A tree's digest is the SHA-256 of its canonical manifest (sorted relative paths, each with
its content digest and executable bit, or its symlink target), so two trees with the same
content have the same digest wherever they live.

Sizes come before content: :func:`manifest` with ``max_bytes`` weighs the whole tree from
``lstat`` alone (:func:`footprint`) and refuses it before reading a byte, so a sparse 20 GB
file costs a stat, not minutes of hashing. Files are opened without blocking and checked to be
regular, so a FIFO swapped in after the walk is refused instead of waited on.
"""

from __future__ import annotations

import errno
import fnmatch
import functools
import hashlib
import json
import os
import re
import stat
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

_CHUNK = 1 << 20


@dataclass(frozen=True)
class Entry:
    """One file of a tree manifest: a regular file (digest, size, executable) or a symlink."""

    path: str
    digest: str = ""
    size: int = 0
    executable: bool = False
    link: str | None = None

    def to_json(self) -> dict[str, object]:
        if self.link is not None:
            return {"link": self.link}
        return {"sha256": self.digest, "size": self.size, "x": self.executable}


class TreeTooLargeError(ValueError):
    """A tree weighs more than its caller allows; raised before any of its files is read."""

    def __init__(self, total: int, limit: int, largest: list[tuple[str, int]]) -> None:
        super().__init__(f"the tree weighs {total} bytes, more than {limit}")
        self.total = total
        self.limit = limit
        #: The heaviest files, ``(relative path, footprint)``, heaviest first.
        self.largest = largest


def footprint(info: os.stat_result) -> int:
    """What a file weighs: its size (what hashing and copying read, holes included) or the disk
    allocated to it (which may run past its size), whichever is larger."""
    return max(info.st_size, info.st_blocks * 512)


def file_digest(path: Path, *, follow_symlinks: bool = True) -> str:
    """SHA-256 of a regular file's bytes; anything else is refused with ``OSError``, never waited on."""
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | (0 if follow_symlinks else os.O_NOFOLLOW)
    digest = hashlib.sha256()
    with os.fdopen(os.open(path, flags), "rb") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            raise OSError(errno.EINVAL, "not a regular file", str(path))
        while chunk := handle.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def bytes_digest(data: bytes) -> str:
    """SHA-256 of a byte string."""
    return hashlib.sha256(data).hexdigest()


@functools.lru_cache(maxsize=64)
def _exclusion(patterns: tuple[str, ...]) -> tuple[re.Pattern[str] | None, tuple[str, ...]]:
    """``patterns`` compiled once: one regex of every glob (``fnmatch`` semantics, POSIX case) and
    the folder prefixes they name. A walk matches every file against them: this is per-step work."""
    if not patterns:
        return None, ()
    return re.compile("|".join(fnmatch.translate(p) for p in patterns)), tuple(p.rstrip("/") + "/" for p in patterns)


def _matches(relative: str, patterns: tuple[str, ...]) -> bool:
    regex, prefixes = _exclusion(patterns)
    if regex is None:
        return False
    if regex.match(relative) or any(regex.match(part) for part in relative.split("/")):
        return True
    return relative in patterns or relative.startswith(prefixes)


def walk_tree(
    root: Path, *, include: Iterable[str] | None = None, exclude: Iterable[str] = ()
) -> Iterator[tuple[str, Path, os.stat_result]]:
    """Yield ``(relative path, absolute path, lstat)`` for files and symlinks under ``root``.

    Directories are not followed through symlinks. ``include`` restricts to top-level names;
    ``exclude`` takes glob patterns matched against the relative path and each component.
    """
    includes = tuple(include) if include is not None else None
    excludes = tuple(exclude)
    for directory, dirnames, filenames in os.walk(root, followlinks=False):
        base = Path(directory)
        rel_dir = base.relative_to(root).as_posix()
        rel_dir = "" if rel_dir == "." else rel_dir + "/"
        kept = []
        for name in sorted(dirnames):
            rel = rel_dir + name
            if (includes is not None and not rel_dir and name not in includes) or _matches(rel, excludes):
                continue
            full = base / name
            if full.is_symlink():  # os.walk lists symlinked dirs as dirs; treat them as links
                yield rel, full, full.lstat()
                continue
            kept.append(name)
        dirnames[:] = kept
        for name in sorted(filenames):
            rel = rel_dir + name
            if (includes is not None and not rel_dir and name not in includes) or _matches(rel, excludes):
                continue
            full = base / name
            yield rel, full, full.lstat()


#: (path, size, mtime_ns, inode, ctime_ns) -> content digest, for files that did not change.
StatCache = dict[tuple[str, int, int, int, int], str]


def manifest(
    root: Path,
    *,
    include: Iterable[str] | None = None,
    exclude: Iterable[str] = (),
    cache: StatCache | None = None,
    max_bytes: int | None = None,
) -> list[Entry]:
    """The sorted manifest of a tree (regular files and symlinks; special files are skipped).

    With ``cache``, a file whose size, mtime, ctime and inode are unchanged is not read again.
    With ``max_bytes``, a tree whose files' footprints add up to more raises
    :class:`TreeTooLargeError` before any file is read.
    """
    found = list(walk_tree(root, include=include, exclude=exclude))
    if max_bytes is not None:
        weights = [(rel, footprint(st)) for rel, _, st in found if stat.S_ISREG(st.st_mode)]
        total = sum(weight for _, weight in weights)
        if total > max_bytes:
            raise TreeTooLargeError(total, max_bytes, sorted(weights, key=lambda item: (-item[1], item[0]))[:3])
    entries = []
    for rel, full, st in found:
        if stat.S_ISLNK(st.st_mode):
            entries.append(Entry(path=rel, link=os.readlink(full)))
        elif stat.S_ISREG(st.st_mode):
            key = (rel, st.st_size, st.st_mtime_ns, st.st_ino, st.st_ctime_ns)
            digest = cache.get(key) if cache is not None else None
            if digest is None:
                digest = file_digest(full, follow_symlinks=False)
                if cache is not None:
                    cache[key] = digest
            entries.append(Entry(path=rel, digest=digest, size=st.st_size, executable=bool(st.st_mode & 0o111)))
    entries.sort(key=lambda e: e.path)
    return entries


def manifest_digest(entries: Iterable[Entry]) -> str:
    """Digest of a manifest, independent of where the tree lives."""
    canonical = json.dumps({e.path: e.to_json() for e in entries}, sort_keys=True, separators=(",", ":"))
    return bytes_digest(canonical.encode())


def tree_digest(root: Path, *, include: Iterable[str] | None = None, exclude: Iterable[str] = ()) -> str:
    """Digest of a directory tree's content."""
    return manifest_digest(manifest(root, include=include, exclude=exclude))
