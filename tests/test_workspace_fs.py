"""File tools stay inside the workspace and explain every refusal."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from gym_trainfail.errors import ToolError
from gym_trainfail.workspace_fs import MAX_READ_CHARS, WorkspaceFiles


@pytest.fixture
def files(tmp_path: Path) -> WorkspaceFiles:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "a.py").write_text("x = 1\ny = 2\nx = 1\n")
    (root / "pkg").mkdir()
    (root / "pkg" / "m.py").write_text("print('m')\n")
    (tmp_path / "secret.txt").write_text("host secret")
    return WorkspaceFiles(root, "/workspace")


def test_relative_and_sandbox_absolute_paths(files: WorkspaceFiles) -> None:
    assert files.read("a.py").startswith("x = 1")
    assert files.read("/workspace/pkg/m.py") == "print('m')\n"
    assert files.read("a.py", start_line=2, end_line=2) == "y = 2\n"


@pytest.mark.parametrize("path", ["../secret.txt", "pkg/../../secret.txt", "/etc/passwd", "/workspace/../secret.txt"])
def test_escapes_are_refused(files: WorkspaceFiles, path: str) -> None:
    with pytest.raises(ToolError, match="outside the workspace"):
        files.read(path)
    with pytest.raises(ToolError, match="outside the workspace"):
        files.write(path, "pwned")
    assert (files.root.parent / "secret.txt").read_text() == "host secret"


def test_symlink_pointing_out_is_refused(files: WorkspaceFiles) -> None:
    os.symlink(files.root.parent / "secret.txt", files.root / "link.txt")
    os.symlink(files.root.parent, files.root / "up")
    with pytest.raises(ToolError, match="resolves outside the workspace"):
        files.read("link.txt")
    with pytest.raises(ToolError, match="resolves outside the workspace"):
        files.write("up/new.txt", "x")
    assert not (files.root.parent / "new.txt").exists()


def test_binary_and_large_files(files: WorkspaceFiles) -> None:
    (files.root / "blob.bin").write_bytes(b"\x00\x01\x02" * 10)
    with pytest.raises(ToolError, match="binary file"):
        files.read("blob.bin")
    (files.root / "big.txt").write_text("z" * (MAX_READ_CHARS * 2))
    shown = files.read("big.txt")
    assert len(shown) < MAX_READ_CHARS + 200 and "file continues" in shown


def test_edit_requires_a_unique_exact_match(files: WorkspaceFiles) -> None:
    with pytest.raises(ToolError, match="occurs 2 times"):
        files.edit("a.py", "x = 1", "x = 3")
    with pytest.raises(ToolError, match="was not found"):
        files.edit("a.py", "q = 9", "x = 3")
    files.edit("a.py", "y = 2", "y = 5")
    assert files.read("a.py") == "x = 1\ny = 5\nx = 1\n"
    files.edit("a.py", "x = 1", "x = 0", replace_all=True)
    assert files.read("a.py") == "x = 0\ny = 5\nx = 0\n"


def test_write_creates_parents_and_list_shows_tree(files: WorkspaceFiles) -> None:
    assert files.write("new/dir/f.txt", "hi") == "created new/dir/f.txt (2 bytes)"
    listing = files.listing(".")
    assert "new/" in listing and "    f.txt  (2 bytes)" in listing
    with pytest.raises(ToolError, match="does not exist"):
        files.listing("nope")
