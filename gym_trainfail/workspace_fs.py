"""File tools confined to the workspace: read, write, edit, list.

They run on the host against the sandbox's bind-mounted workspace. Every path is resolved
through symlinks and must stay inside the workspace; ``..``, absolute paths elsewhere and
symlinks that point out are refused with a :class:`~gym_trainfail.errors.ToolError`.

Only regular files are read or written. A FIFO, socket or device (or a symlink to one) is
refused from its ``lstat`` before anything opens it, and the open itself never blocks, never
follows a symlink and is checked with ``fstat``, so a path swapped between check and open is
refused too. Sizes are looked at before any byte is read: a file is never read whole to tell
text from binary, and files over :data:`MAX_TEXT_FILE_BYTES` are not read whole at all.
"""

from __future__ import annotations

import errno
import os
import shlex
import stat
from pathlib import Path

from gym_trainfail.errors import ToolError

MAX_READ_CHARS = 40_000
MAX_WRITE_BYTES = 2 << 20
MAX_LIST_ENTRIES = 400
#: How much of a file ``read`` looks at to tell text from binary.
SNIFF_BYTES = 8192
#: The file tools read no file whole past this size (or past this much disk allocated to it).
MAX_TEXT_FILE_BYTES = 16 << 20
#: What an open that must not block or follow a final symlink answers for a special file.
_NOT_REGULAR_ERRNOS = frozenset({errno.ENXIO, errno.ELOOP, errno.EISDIR, errno.ENODEV, errno.EOPNOTSUPP})
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
        data = self._load(target, path, refuse_binary=True)
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
        existing = _lstat(target)
        if existing is not None:
            _require_regular(existing.st_mode, path)
        target.parent.mkdir(parents=True, exist_ok=True)
        # No O_TRUNC: nothing is truncated before fstat has shown a regular file.
        with os.fdopen(self._open_regular(target, path, os.O_WRONLY | os.O_CREAT), "wb") as handle:
            handle.truncate(0)
            handle.write(data)
        verb = "overwrote" if existing is not None else "created"
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
        data = self._load(target, path, refuse_binary=False)
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            raise ToolError(f"{path!r} is not UTF-8 text; edit it with the shell tool") from None

    def _load(self, target: Path, path: str, *, refuse_binary: bool) -> bytes:
        """The bytes of the regular file ``target``: its size checked first, a prefix sniffed for
        binary content, and never more than :data:`MAX_TEXT_FILE_BYTES` read."""
        with os.fdopen(self._open_regular(target, path, os.O_RDONLY), "rb") as handle:
            info = os.fstat(handle.fileno())
            head = handle.read(SNIFF_BYTES)
            if refuse_binary and b"\x00" in head:
                raise ToolError(
                    f"{path!r} is a binary file ({info.st_size} bytes); inspect it with the shell tool "
                    "(e.g. `xxd | head`)"
                )
            if max(info.st_size, info.st_blocks * 512) > MAX_TEXT_FILE_BYTES:
                raise ToolError(_too_large(path, info))
            data = head + handle.read(MAX_TEXT_FILE_BYTES + 1 - len(head))
            if len(data) > MAX_TEXT_FILE_BYTES:  # it grew after fstat
                raise ToolError(_too_large(path, os.fstat(handle.fileno())))
        return data

    def _open_regular(self, target: Path, path: str, flags: int) -> int:
        """A descriptor of the regular file at ``target``, opened without ever blocking.

        ``lstat`` refuses a special file before anything opens it. The open neither follows a
        final symlink nor waits for a FIFO's other end, and ``fstat`` checks what was opened, so
        a file swapped in after the check is refused too; where ``/proc`` shows the descriptor's
        path, a parent directory swapped for a symlink that leads out is refused as well."""
        existing = _lstat(target)
        if existing is not None:
            _require_regular(existing.st_mode, path)
        try:
            fd = os.open(target, flags | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
        except OSError as exc:
            if exc.errno not in _NOT_REGULAR_ERRNOS:
                raise
            swapped = _lstat(target)
            if swapped is not None:
                _require_regular(swapped.st_mode, path)
            raise ToolError(f"{path!r} is not a regular file (it changed while being opened)") from None
        try:
            _require_regular(os.fstat(fd).st_mode, path)
            self._require_inside(fd, path)
        except BaseException:
            os.close(fd)
            raise
        return fd

    def _require_inside(self, fd: int, path: str) -> None:
        try:
            opened = Path(os.readlink(f"/proc/self/fd/{fd}"))
        except OSError:
            return  # no /proc (not Linux): the resolve() check stands alone
        root = self.root.resolve()
        if opened != root and root not in opened.parents:
            raise ToolError(f"{path!r} resolves outside the workspace (it changed while being opened); refused")

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


def _lstat(path: Path) -> os.stat_result | None:
    try:
        return os.lstat(path)
    except FileNotFoundError:
        return None


_KINDS = (
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISLNK, "a symlink"),
)


def _require_regular(mode: int, path: str) -> None:
    if stat.S_ISREG(mode):
        return
    kind = next((name for test, name in _KINDS if test(mode)), "a special file")
    raise ToolError(f"{path!r} is not a regular file ({kind}); the file tools read and write regular files only")


def _too_large(path: str, info: os.stat_result) -> str:
    allocated = info.st_blocks * 512
    shown = f"{info.st_size} bytes"
    if allocated > max(info.st_size, MAX_TEXT_FILE_BYTES):  # preallocated past its end
        shown += f" ({allocated} bytes allocated)"
    return (
        f"{path!r} is {shown}, more than the {MAX_TEXT_FILE_BYTES >> 20} MiB the file tools read at once; "
        f"read a part of it with the shell tool (e.g. `sed -n '1,200p' {shlex.quote(path)}`)"
    )
