"""Content-addressed snapshots: stable tree hashes, restore, size limit."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from gym_trainfail.errors import ToolError
from gym_trainfail.revisions import ObjectStore, RevisionLog, restore, snapshot


def _workspace(root: Path) -> Path:
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "a.py").write_text("a = 1\n")
    (root / "run.sh").write_text("#!/bin/sh\necho hi\n")
    (root / "run.sh").chmod(0o755)
    os.symlink("pkg/a.py", root / "link.py")
    (root / "outputs").mkdir()
    (root / "outputs" / "ckpt.bin").write_bytes(b"\x00" * 100)
    (root / "pkg" / "__pycache__").mkdir()
    (root / "pkg" / "__pycache__" / "a.cpython-311.pyc").write_bytes(b"junk")
    return root


def test_tree_hash_depends_only_on_content(tmp_path: Path) -> None:
    store = ObjectStore(tmp_path / "objects")
    one = snapshot(_workspace(tmp_path / "one"), store, exclude=["outputs"])
    two = snapshot(_workspace(tmp_path / "two"), store, exclude=["outputs"])
    assert one.digest == two.digest
    assert [e.path for e in one.entries] == ["link.py", "pkg/a.py", "run.sh"]
    (tmp_path / "two" / "pkg" / "a.py").write_text("a = 2\n")
    assert snapshot(tmp_path / "two", store, exclude=["outputs"]).digest != one.digest


def test_restore_round_trip(tmp_path: Path) -> None:
    store = ObjectStore(tmp_path / "objects")
    tree = snapshot(_workspace(tmp_path / "ws"), store, exclude=["outputs"])
    restore(tree, store, tmp_path / "back")
    assert (tmp_path / "back" / "pkg" / "a.py").read_text() == "a = 1\n"
    assert os.access(tmp_path / "back" / "run.sh", os.X_OK)
    assert os.readlink(tmp_path / "back" / "link.py") == "pkg/a.py"
    assert snapshot(tmp_path / "back", store).digest == tree.digest


def test_revision_log_numbers_and_survives_workspace_changes(tmp_path: Path) -> None:
    ws = _workspace(tmp_path / "ws")
    log = RevisionLog(tmp_path / "run")
    assert log.record(ws, ["outputs"])[0] == 1
    (ws / "pkg" / "a.py").write_text("changed\n")
    number, tree = log.record(ws, ["outputs"])
    assert number == 2 and log.numbers() == [1, 2]
    log.checkout(1, tmp_path / "rev1")
    assert (tmp_path / "rev1" / "pkg" / "a.py").read_text() == "a = 1\n"
    assert log.load(2)[1].digest == tree.digest


def test_oversized_snapshot_is_refused_with_advice(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("gym_trainfail.revisions.MAX_SNAPSHOT_BYTES", 50)
    ws = _workspace(tmp_path / "ws")
    with pytest.raises(ToolError, match="largest: outputs/ckpt.bin"):
        snapshot(ws, ObjectStore(tmp_path / "objects"))
