"""Content-addressed workspace snapshots: submitted revisions and recovery checkpoints.

A snapshot is a manifest (relative path → blob digest, size, executable bit, or symlink
target) whose digest is the *tree hash*; blobs live once in an object store keyed by their
SHA-256, and so does the manifest itself (its canonical bytes, under the tree hash): a revision
record or a checkpoint names its tree, so submitting or checkpointing an unchanged tree again
costs a few bytes, whatever the tree. Snapshots are taken on the host, outside the sandbox, so
the agent cannot alter a recorded revision. A tree is bounded before a byte of it is read: its
files' weight plus what its entries' names weigh, its entry count and its depth.
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
from gym_trainfail.hashing import (
    MAX_TREE_DEPTH,
    Entry,
    StatCache,
    TooManyEntriesError,
    TreeTooDeepError,
    TreeTooLargeError,
    bytes_digest,
    manifest,
    manifest_bytes,
    manifest_digest,
)

#: Never part of a snapshot, whatever the case says.
ALWAYS_EXCLUDED = ("__pycache__", "*.pyc", ".ipynb_checkpoints")
#: A snapshot larger than this is refused (outputs and checkpoints belong in excluded folders), before
#: any file is hashed; a file weighs its size or its allocated blocks, whichever is larger.
MAX_SNAPSHOT_BYTES = 256 << 20
#: The most files, links and folders a snapshot may hold (each also weighs its name against
#: :data:`MAX_SNAPSHOT_BYTES`); its folders may nest at most :data:`~gym_trainfail.hashing.MAX_TREE_DEPTH` deep.
MAX_SNAPSHOT_ENTRIES = 20_000


@dataclass(frozen=True)
class Tree:
    """A snapshot: its digest and manifest."""

    digest: str
    entries: tuple[Entry, ...]

    @property
    def size(self) -> int:
        return sum(e.size for e in self.entries)

    @classmethod
    def load(cls, data: dict[str, Any], store: ObjectStore) -> Tree:
        """The tree a revision record or checkpoint names: its manifest from the store (records
        written before manifests were stored carry the manifest inline)."""
        if "files" in data:
            return cls.from_json(data)
        digest = data["tree"]
        if not isinstance(digest, str) or len(digest) != 64:
            raise ValueError(f"snapshot record names no tree: {str(digest)[:80]}")
        raw = store.path(digest).read_bytes()
        if bytes_digest(raw) != digest:
            raise ValueError(f"the stored manifest of tree {digest} does not match its hash")
        return cls.from_json({"tree": digest, "files": json.loads(raw)})

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
    """Record the workspace's content (and its manifest) into ``store`` and return its tree.

    A tree over the bounds (weight with names, entry count, depth) is refused with a
    :class:`~gym_trainfail.errors.ToolError` that says what to do, before any file is read."""
    excluded = (*ALWAYS_EXCLUDED, *exclude)
    where = f"({', '.join(exclude) or 'none configured'})"
    try:
        entries = manifest(
            workspace, exclude=excluded, cache=cache, max_bytes=MAX_SNAPSHOT_BYTES, max_entries=MAX_SNAPSHOT_ENTRIES
        )
    except TreeTooLargeError as exc:
        names = ", ".join(f"{path} ({weight >> 20} MiB)" for path, weight in exc.largest)
        raise ToolError(
            f"the workspace holds {exc.total >> 20} MiB of files, above the {MAX_SNAPSHOT_BYTES >> 20} MiB a "
            f"revision may hold (file names count too); largest: {names or 'none, the names alone'}. Move run "
            f"outputs into an excluded folder {where} or delete them, then try again."
        ) from None
    except TooManyEntriesError:
        raise ToolError(
            f"the workspace holds more than {MAX_SNAPSHOT_ENTRIES} files, links and folders, above what a revision "
            f"may hold; move generated files into an excluded folder {where} or delete them, then try again."
        ) from None
    except TreeTooDeepError as exc:
        raise ToolError(
            f"the workspace has folders nested more than {MAX_TREE_DEPTH} levels deep ({exc.path[:120]}...), "
            "deeper than a revision may hold; flatten or delete them, then try again."
        ) from None
    for entry in entries:
        if entry.link is None:
            store.put(workspace / entry.path, entry.digest)
    raw = manifest_bytes(entries)  # serialised once: its digest is the tree hash, and it is what is stored
    digest = bytes_digest(raw)
    store.put_bytes(raw, digest)
    return Tree(digest=digest, entries=tuple(entries))


def restore(tree: Tree, store: ObjectStore, target: Path) -> None:
    """Materialise ``tree`` into the empty or absent folder ``target`` (a tree nested deeper than
    any walk accepts, which only a record written before the bound existed can hold, raises
    :class:`~gym_trainfail.hashing.TreeTooDeepError` before anything is written)."""
    for entry in tree.entries:
        if entry.path.count("/") > MAX_TREE_DEPTH:
            raise TreeTooDeepError(entry.path, MAX_TREE_DEPTH)
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
        record = {"revision": number, "t": time.time(), "tree": tree.digest}
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
        return float(data["t"]), Tree.load(data, self.store)

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
        partial.write_text(json.dumps({"step": step, "tree": tree.digest}))
        os.replace(partial, self.path)
        return tree

    def latest(self) -> tuple[int, Tree] | None:
        if not self.path.exists():
            return None
        data = json.loads(self.path.read_text())
        return int(data["step"]), Tree.load(data, self.store)
