"""Content-addressed workspace snapshots: submitted revisions and recovery checkpoints.

A snapshot is a manifest (relative path → blob digest, size, executable bit, or symlink
target) whose digest is the *tree hash*; blobs live once in an object store keyed by their
SHA-256. Snapshots are taken on the host, outside the sandbox, so the agent cannot alter a
recorded revision.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gym_trainfail.errors import ToolError
from gym_trainfail.hashing import Entry, StatCache, TreeTooLargeError, manifest, manifest_digest

#: Never part of a snapshot, whatever the case says.
ALWAYS_EXCLUDED = ("__pycache__", "*.pyc", ".ipynb_checkpoints")
#: A snapshot larger than this is refused (outputs and checkpoints belong in excluded folders), before
#: any file is hashed; a file weighs its size or its allocated blocks, whichever is larger.
MAX_SNAPSHOT_BYTES = 256 << 20


@dataclass(frozen=True)
class Tree:
    """A snapshot: its digest and manifest."""

    digest: str
    entries: tuple[Entry, ...]

    @property
    def size(self) -> int:
        return sum(e.size for e in self.entries)

    def to_json(self) -> dict[str, Any]:
        return {"tree": self.digest, "files": {e.path: e.to_json() for e in self.entries}}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Tree:
        entries = []
        for path, meta in sorted(data["files"].items()):
            if "link" in meta:
                entries.append(Entry(path=path, link=meta["link"]))
            else:
                entries.append(Entry(path=path, digest=meta["sha256"], size=meta["size"], executable=meta["x"]))
        tree = cls(digest=data["tree"], entries=tuple(entries))
        if manifest_digest(tree.entries) != tree.digest:
            raise ValueError(f"snapshot manifest does not match its tree hash {tree.digest}")
        return tree


class ObjectStore:
    """Blobs by SHA-256 under ``root/ab/cdef…``.

    Blobs are never removed or changed once stored, so the digests this instance has seen stored
    are remembered: a checkpoint after every step then costs no ``stat`` per unchanged file."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._stored: set[str] = set()

    def path(self, digest: str) -> Path:
        return self.root / digest[:2] / digest[2:]

    def put(self, source: Path, digest: str) -> None:
        """Store the file ``source``, whose SHA-256 is ``digest``, unless the store holds it."""
        self._publish(digest, lambda partial: shutil.copyfile(source, partial))

    def put_bytes(self, data: bytes, digest: str) -> None:
        """Store ``data``, whose SHA-256 is ``digest``, unless the store holds it."""
        self._publish(digest, lambda partial: partial.write_bytes(data))

    def _publish(self, digest: str, write: Callable[[Path], object]) -> None:
        if digest in self._stored:
            return
        target = self.path(digest)
        if not target.exists():
            target.parent.mkdir(parents=True, exist_ok=True)
            partial = target.with_name(f".{target.name}.{os.getpid()}.tmp")
            write(partial)
            partial.chmod(0o444)
            os.replace(partial, target)
        self._stored.add(digest)


def snapshot(workspace: Path, store: ObjectStore, exclude: Iterable[str] = (), cache: StatCache | None = None) -> Tree:
    """Record the workspace's content into ``store`` and return its tree."""
    excluded = (*ALWAYS_EXCLUDED, *exclude)
    try:
        entries = manifest(workspace, exclude=excluded, cache=cache, max_bytes=MAX_SNAPSHOT_BYTES)
    except TreeTooLargeError as exc:
        names = ", ".join(f"{path} ({weight >> 20} MiB)" for path, weight in exc.largest)
        raise ToolError(
            f"the workspace holds {exc.total >> 20} MiB of files, above the {MAX_SNAPSHOT_BYTES >> 20} MiB a "
            f"revision may hold; largest: {names}. Move run outputs into an excluded folder "
            f"({', '.join(exclude) or 'none configured'}) or delete them, then try again."
        ) from None
    for entry in entries:
        if entry.link is None:
            store.put(workspace / entry.path, entry.digest)
    return Tree(digest=manifest_digest(entries), entries=tuple(entries))


def restore(tree: Tree, store: ObjectStore, target: Path) -> None:
    """Materialise ``tree`` into the empty or absent folder ``target``."""
    target.mkdir(parents=True, exist_ok=True)
    for entry in tree.entries:
        path = target / entry.path
        path.parent.mkdir(parents=True, exist_ok=True)
        if entry.link is not None:
            os.symlink(entry.link, path)
            continue
        shutil.copyfile(store.path(entry.digest), path)
        path.chmod(0o755 if entry.executable else 0o644)


class RevisionLog:
    """The revisions of one episode: ``revisions/<n>.json`` plus the shared object store."""

    def __init__(self, run_dir: Path) -> None:
        self.folder = run_dir / "revisions"
        self.store = ObjectStore(run_dir / "objects")

    def record(self, workspace: Path, exclude: Iterable[str] = ()) -> tuple[int, Tree]:
        """Snapshot the workspace as the next revision; returns its number and tree."""
        tree = snapshot(workspace, self.store, exclude)
        self.folder.mkdir(parents=True, exist_ok=True)
        number = len(self.numbers()) + 1
        record = {"revision": number, "t": time.time(), **tree.to_json()}
        partial = self.folder / f".{number}.json.tmp"
        partial.write_text(json.dumps(record, sort_keys=True))
        os.replace(partial, self.folder / f"{number}.json")
        return number, tree

    def numbers(self) -> list[int]:
        if not self.folder.is_dir():
            return []
        return sorted(int(p.stem) for p in self.folder.glob("*.json") if p.stem.isdigit())

    def load(self, number: int) -> tuple[float, Tree]:
        """The time a revision was recorded and its tree."""
        data = json.loads((self.folder / f"{number}.json").read_text())
        return float(data["t"]), Tree.from_json(data)

    def checkout(self, number: int, target: Path) -> Tree:
        """Materialise revision ``number`` into ``target``."""
        _, tree = self.load(number)
        restore(tree, self.store, target)
        return tree


class Checkpoints:
    """The latest known-good workspace state, to restart a sandbox that died."""

    def __init__(self, run_dir: Path, store: ObjectStore) -> None:
        self.path = run_dir / "checkpoint.json"
        self.store = store
        self._stat_cache: StatCache = {}
        self._last: str | None = None

    def save(self, workspace: Path, exclude: Iterable[str], step: int) -> Tree:
        """Record the workspace; a step that changed nothing leaves the checkpoint as it is."""
        tree = snapshot(workspace, self.store, exclude, cache=self._stat_cache)
        if tree.digest == self._last:
            return tree
        self._last = tree.digest
        partial = self.path.with_suffix(".tmp")
        partial.write_text(json.dumps({"step": step, **tree.to_json()}))
        os.replace(partial, self.path)
        return tree

    def latest(self) -> tuple[int, Tree] | None:
        if not self.path.exists():
            return None
        data = json.loads(self.path.read_text())
        return int(data["step"]), Tree.from_json(data)
