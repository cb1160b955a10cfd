"""Revision source maps: what a revision changed relative to the case's original workspace."""

from __future__ import annotations

import difflib
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal

from gym_trainfail.cases import CaseSpec
from gym_trainfail.hashing import Entry, manifest
from gym_trainfail.revisions import ALWAYS_EXCLUDED, ObjectStore, Tree

Change = Literal["added", "removed", "modified"]


@dataclass(frozen=True)
class FileChange:
    """One file a revision changed, with line counts (``binary`` when it is not text)."""

    path: str
    change: Change
    added: int = 0
    removed: int = 0
    binary: bool = False

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class SourceMap:
    """A revision against the original workspace: changed files and the unified diff."""

    files: tuple[FileChange, ...]
    diff: str

    @property
    def lines_added(self) -> int:
        return sum(f.added for f in self.files)

    @property
    def lines_removed(self) -> int:
        return sum(f.removed for f in self.files)


def source_map(case: CaseSpec, tree: Tree, store: ObjectStore) -> SourceMap:
    """Compare ``tree`` (a revision in ``store``) with ``case``'s pristine workspace."""
    original_root = case.workspace_dir
    original = {e.path: e for e in manifest(original_root, exclude=(*ALWAYS_EXCLUDED, *case.workspace_exclude))}
    revised = {e.path: e for e in tree.entries}
    changes: list[FileChange] = []
    chunks: list[str] = []
    for path in sorted(set(original) | set(revised)):
        before, after = original.get(path), revised.get(path)
        if before is not None and after is not None and before.to_json() == after.to_json():
            continue
        old = _text(original_root / path, before) if before is not None else []
        new = _text(store.path(after.digest), after) if after is not None else []
        change: Change = "added" if before is None else "removed" if after is None else "modified"
        if old is None or new is None:
            changes.append(FileChange(path, change, binary=True))
            chunks.append(f"Binary files a/{path} and b/{path} differ\n")
            continue
        lines = list(difflib.unified_diff(old, new, f"a/{path}", f"b/{path}"))
        added = sum(1 for line in lines[2:] if line.startswith("+"))
        removed = sum(1 for line in lines[2:] if line.startswith("-"))
        changes.append(FileChange(path, change, added, removed))
        chunks.append(
            "".join(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in lines)
        )
    return SourceMap(tuple(changes), "".join(chunks))


def _text(path: Path, entry: Entry) -> list[str] | None:
    """A file's lines, ``None`` for binary content; a symlink reads as its target."""
    if entry.link is not None:
        return [f"-> {entry.link}\n"]
    try:
        return path.read_text(encoding="utf-8").splitlines(keepends=True)
    except (UnicodeDecodeError, OSError):
        return None
