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


#: Folder levels below a tree's root that any walk accepts. A deeper tree is refused as a whole:
#: recursive tools (the host's and many of an agent's) fail on one, and no workspace needs it.
MAX_TREE_DEPTH = 64
#: What one manifest entry weighs besides its file content (its name, metadata and record), when
#: a walk charges a tree against a byte limit: names are not free, even for empty files.
ENTRY_OVERHEAD_BYTES = 256


#: What tools leave beside sources (bytecode, linter and test caches, never tracked): never part of a
#: content digest, so a record taken where someone ran ruff or pytest in a case folder still matches
#: a clean clone.
TOOL_LITTER = ("__pycache__", "*.pyc", ".ruff_cache", ".mypy_cache", ".pytest_cache")


class TreeRefusedError(ValueError):
    """A tree a walk will not take (too deep, too many entries, too heavy); raised before any of
    its files is read."""


class TreeTooLargeError(TreeRefusedError):
    """A tree weighs more than its caller allows; raised before any of its files is read."""

    def __init__(self, total: int, limit: int, largest: list[tuple[str, int]]) -> None:
        super().__init__(f"the tree weighs {total} bytes, more than {limit}")
        self.total = total
        self.limit = limit
        #: The heaviest files, ``(relative path, footprint)``, heaviest first.
        self.largest = largest


class TreeTooDeepError(TreeRefusedError):
    """A folder of the tree lies deeper than the walk's bound."""

    def __init__(self, path: str, limit: int) -> None:
        super().__init__(f"{path[:200]}{'...' if len(path) > 200 else ''} is nested more than {limit} folders deep")
        self.path = path
        self.limit = limit


class TooManyEntriesError(TreeRefusedError):
    """A tree holds more files, links and folders than its caller allows."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"the tree holds more than {limit} files, links and folders")
        self.limit = limit


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
    root: Path,
    *,
    include: Iterable[str] | None = None,
    exclude: Iterable[str] = (),
    max_depth: int = MAX_TREE_DEPTH,
    max_entries: int | None = None,
) -> Iterator[tuple[str, Path, os.stat_result]]:
    """Yield ``(relative path, absolute path, lstat)`` for files and symlinks under ``root``.

    Directories are not followed through symlinks. ``include`` restricts to top-level names;
    ``exclude`` takes glob patterns matched against the relative path and each component. The
    walk is iterative (a deep tree cannot exhaust the interpreter's stack) and refuses a folder
    more than ``max_depth`` levels down (:class:`TreeTooDeepError`) and, with ``max_entries``, a
    tree of more files, links and folders (:class:`TooManyEntriesError`). Unreadable folders are
    skipped, as ``os.walk`` does.
    """
    includes = tuple(include) if include is not None else None
    excludes = tuple(exclude)
    seen = 0
    pending: list[tuple[str, Path, int]] = [("", root, 0)]
    while pending:
        rel_dir, base, depth = pending.pop()
        try:
            with os.scandir(base) as listing:
                children = sorted(listing, key=lambda entry: entry.name)
        except OSError:
            continue
        folders = []
        for child in children:
            rel = rel_dir + child.name
            if (includes is not None and not rel_dir and child.name not in includes) or _matches(rel, excludes):
                continue
            seen += 1
            if max_entries is not None and seen > max_entries:
                raise TooManyEntriesError(max_entries)
            full = base / child.name
            try:
                info = child.stat(follow_symlinks=False)
            except OSError:
                continue
            if stat.S_ISDIR(info.st_mode):
                if depth + 1 > max_depth:
                    raise TreeTooDeepError(rel, max_depth)
                folders.append((rel + "/", full, depth + 1))
                continue
            yield rel, full, info
        pending.extend(reversed(folders))


#: (path, size, mtime_ns, inode, ctime_ns) -> content digest, for files that did not change.
StatCache = dict[tuple[str, int, int, int, int], str]


def manifest(
    root: Path,
    *,
    include: Iterable[str] | None = None,
    exclude: Iterable[str] = (),
    cache: StatCache | None = None,
    max_bytes: int | None = None,
    max_entries: int | None = None,
) -> list[Entry]:
    """The sorted manifest of a tree (regular files and symlinks; special files are skipped).

    With ``cache``, a file whose size, mtime, ctime and inode are unchanged is not read again.
    With ``max_bytes``, a tree whose files' footprints plus what its entries' names and records
    weigh (:data:`ENTRY_OVERHEAD_BYTES` each) add up to more raises :class:`TreeTooLargeError`
    before any file is read; ``max_entries`` bounds the entry count (see :func:`walk_tree`).
    """
    found = list(walk_tree(root, include=include, exclude=exclude, max_entries=max_entries))
    if max_bytes is not None:
        weights = [(rel, footprint(st)) for rel, _, st in found if stat.S_ISREG(st.st_mode)]
        names = sum(ENTRY_OVERHEAD_BYTES + len(rel.encode("utf-8", "surrogateescape")) for rel, _, _ in found)
        total = sum(weight for _, weight in weights) + names
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


def manifest_bytes(entries: Iterable[Entry]) -> bytes:
    """The canonical serialisation of a manifest (what its digest is taken of)."""
    canonical = json.dumps({e.path: e.to_json() for e in entries}, sort_keys=True, separators=(",", ":"))
    return canonical.encode()


def manifest_digest(entries: Iterable[Entry]) -> str:
    """Digest of a manifest, independent of where the tree lives."""
    return bytes_digest(manifest_bytes(entries))


def tree_digest(root: Path, *, include: Iterable[str] | None = None, exclude: Iterable[str] = ()) -> str:
    """Digest of a directory tree's content."""
    return manifest_digest(manifest(root, include=include, exclude=exclude))
