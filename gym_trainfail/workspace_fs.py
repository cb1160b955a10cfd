"""File tools confined to the workspace: read, write, edit, list.

They run on the host against the sandbox's bind-mounted workspace. Every path is resolved
through symlinks and must stay inside the workspace; ``..``, absolute paths elsewhere and
symlinks that point out are refused with a :class:`~gym_trainfail.errors.ToolError`.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from gym_trainfail.errors import ToolError

MAX_READ_CHARS = 40_000
MAX_WRITE_BYTES = 2 << 20
MAX_LIST_ENTRIES = 400
SKIPPED_DIRS = frozenset({"__pycache__", ".git", ".ipynb_checkpoints"})


class WorkspaceFiles:
    """File operations on one workspace; ``sandbox_root`` is how commands see it."""

    def __init__(self, root: Path, sandbox_root: str) -> None:
        self.root = root
        self.sandbox_root = sandbox_root.rstrip("/") or "/"

    def resolve(self, path: str, *, must_exist: bool = False) -> Path:
        """The host path for a workspace path, refusing anything that leaves the workspace."""
        if not isinstance(path, str):
            raise ToolError(f"path must be a string, got {type(path).__name__}")
        if "\x00" in path:
            raise ToolError("path contains a NUL character")
        relative = path.strip() or "."
        for prefix in (self.sandbox_root, str(self.root)):
            if relative == prefix:
                relative = "."
            elif relative.startswith(prefix.rstrip("/") + "/"):
                relative = relative[len(prefix.rstrip("/")) + 1 :] or "."
        if os.path.isabs(relative):
            raise ToolError(
                f"{path!r} is outside the workspace; use a path relative to {self.sandbox_root} "
                f"(or starting with {self.sandbox_root}/)"
            )
        root = self.root.resolve()
        candidate = root / relative
        real = Path(os.path.realpath(candidate))
        if real != root and root not in real.parents:
            raise ToolError(f"{path!r} resolves outside the workspace (through '..' or a symlink); refused")
        if must_exist and not real.exists():
            raise ToolError(f"{path!r} does not exist in the workspace; list_files shows what does")
        return real

    def display(self, host_path: Path) -> str:
        """How a host path inside the workspace is shown to the agent."""
        relative = host_path.relative_to(self.root.resolve()).as_posix()
        return relative if relative != "." else "."

    def read(self, path: str, start_line: int | None = None, end_line: int | None = None) -> str:
        target = self.resolve(path, must_exist=True)
        if target.is_dir():
            raise ToolError(f"{path!r} is a directory; use list_files")
        if not stat.S_ISREG(target.stat().st_mode):
            raise ToolError(f"{path!r} is not a regular file")
        data = target.read_bytes()
        if b"\x00" in data[:8192]:
            raise ToolError(
                f"{path!r} is a binary file ({len(data)} bytes); inspect it with the shell tool (e.g. `xxd | head`)"
            )
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            raise ToolError(f"{path!r} is not UTF-8 text ({len(data)} bytes); inspect it with the shell tool") from None
        if start_line is not None or end_line is not None:
            lines = text.splitlines(keepends=True)
            first = max(1, start_line or 1)
            last = min(len(lines), end_line or len(lines))
            if first > max(len(lines), 1):
                raise ToolError(f"{path!r} has {len(lines)} lines; start_line {first} is past the end")
            text = "".join(lines[first - 1 : last])
        if len(text) > MAX_READ_CHARS:
            shown = text[:MAX_READ_CHARS]
            lines_shown = shown.count("\n")
            return (
                shown + f"\n[... file continues: {len(text)} characters in all, {lines_shown} lines shown; "
                f"read more with start_line/end_line ...]"
            )
        return text

    def write(self, path: str, content: str) -> str:
        if not isinstance(content, str):
            raise ToolError("content must be a string")
        data = content.encode("utf-8", "surrogatepass")
        if len(data) > MAX_WRITE_BYTES:
            raise ToolError(f"content is {len(data)} bytes; at most {MAX_WRITE_BYTES} bytes per write")
        target = self.resolve(path)
        if target.is_dir():
            raise ToolError(f"{path!r} is a directory")
        if target == self.root.resolve():
            raise ToolError("give a file path, not the workspace itself")
        target.parent.mkdir(parents=True, exist_ok=True)
        existed = target.exists()
        target.write_bytes(data)
        verb = "overwrote" if existed else "created"
        return f"{verb} {self.display(target)} ({len(data)} bytes)"

    def edit(self, path: str, old_text: str, new_text: str, replace_all: bool = False) -> str:
        if not old_text:
            raise ToolError("old_text must not be empty; use write_file to create or replace a whole file")
        current = self.read_whole(path)
        count = current.count(old_text)
        if count == 0:
            raise ToolError(
                f"old_text was not found in {path!r}; it must match the file exactly, whitespace included "
                "(read_file shows the current content)"
            )
        if count > 1 and not replace_all:
            raise ToolError(
                f"old_text occurs {count} times in {path!r}; add surrounding lines to make it unique, "
                "or set replace_all to true"
            )
        updated = current.replace(old_text, new_text) if replace_all else current.replace(old_text, new_text, 1)
        self.write(path, updated)
        return f"edited {path}: replaced {count if replace_all else 1} occurrence(s)"

    def read_whole(self, path: str) -> str:
        target = self.resolve(path, must_exist=True)
        if not target.is_file():
            raise ToolError(f"{path!r} is not a regular file")
        try:
            return target.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            raise ToolError(f"{path!r} is not UTF-8 text; edit it with the shell tool") from None

    def listing(self, path: str = ".", max_depth: int = 3) -> str:
        start = self.resolve(path, must_exist=True)
        if not start.is_dir():
            raise ToolError(f"{path!r} is a file, not a directory")
        lines: list[str] = []
        self._walk(start, 0, max(1, max_depth), lines)
        if not lines:
            return f"{self.display(start)}/ is empty"
        if len(lines) > MAX_LIST_ENTRIES:
            omitted = len(lines) - MAX_LIST_ENTRIES
            lines = lines[:MAX_LIST_ENTRIES] + [f"[... {omitted} more entries; list a sub-directory ...]"]
        return "\n".join(lines)

    def _walk(self, directory: Path, depth: int, max_depth: int, lines: list[str]) -> None:
        if len(lines) > MAX_LIST_ENTRIES:
            return
        try:
            children = sorted(directory.iterdir(), key=lambda p: (not p.is_dir(), p.name))
        except OSError as exc:
            lines.append(f"{'  ' * depth}[cannot list: {exc.strerror}]")
            return
        for child in children:
            indent = "  " * depth
            if child.is_symlink():
                lines.append(f"{indent}{child.name} -> {os.readlink(child)}")
            elif child.is_dir():
                if child.name in SKIPPED_DIRS:
                    continue
                lines.append(f"{indent}{child.name}/")
                if depth + 1 < max_depth:
                    self._walk(child, depth + 1, max_depth, lines)
            else:
                lines.append(f"{indent}{child.name}  ({child.stat().st_size} bytes)")
