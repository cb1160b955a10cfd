"""Trees an agent can make cost the host a bounded amount, and never an exception.

Attacks from issue 20: a tree of many long names (zero bytes of content) that used to grow the
run directory by a full manifest per checkpoint and submit; trees nested deeper than Python's
recursion limit that made ``env.step``, ``Grader.grade_dir``, ``trainfail grade`` and a batch's
grading stage raise ``RecursionError``.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gym_trainfail.cases import CaseSpec
from gym_trainfail.env import TrainFailEnv
from gym_trainfail.files import copy_tree
from gym_trainfail.grading import Grader
from gym_trainfail.hashing import MAX_TREE_DEPTH, TooManyEntriesError, TreeTooDeepError, manifest, walk_tree
from gym_trainfail.revisions import MAX_SNAPSHOT_BYTES, MAX_SNAPSHOT_ENTRIES, ObjectStore, RevisionLog, snapshot
from gym_trainfail.runtimes import Runtime


@pytest.fixture(autouse=True)
def _remove_deep_trees(tmp_path: Path) -> Iterator[None]:
    """Remove what a test left with ``rm -rf``: pytest's own clean-up (``shutil.rmtree``) recurses,
    and a later session would fail removing a 1,100-level tree."""
    yield
    subprocess.run(["rm", "-rf", "--one-file-system", str(tmp_path)], check=False)


def _deep(root: Path, levels: int) -> Path:
    """``root/a/a/…/leaf.txt``, ``levels`` folders deep (made with one ``mkdir -p``: no recursion here)."""
    leaf = root.joinpath(*["a"] * levels)
    subprocess.run(["mkdir", "-p", str(leaf)], check=True)
    (leaf / "leaf.txt").write_text("x")
    return leaf


def _run_bytes(run_dir: Path) -> int:
    return sum(p.stat().st_size for p in run_dir.rglob("*") if p.is_file() and "workspace" not in p.parts)


def act(env: TrainFailEnv, tool: str, **arguments: Any) -> str:
    return env.step({"tool": tool, "arguments": arguments})[0]


# -- walks and copies are iterative and bounded ---------------------------------------------------


def test_a_tree_deeper_than_the_recursion_limit_is_refused_not_a_crash(tmp_path: Path) -> None:
    _deep(tmp_path / "t", 1_100)
    assert sys.getrecursionlimit() < 1_100
    with pytest.raises(TreeTooDeepError, match=f"nested more than {MAX_TREE_DEPTH} folders deep"):
        list(walk_tree(tmp_path / "t"))
    with pytest.raises(TreeTooDeepError):
        copy_tree(tmp_path / "t", tmp_path / "copy")
    # Within the bound both work, and the copy holds what the walk saw.
    _deep(tmp_path / "ok", MAX_TREE_DEPTH)
    copy_tree(tmp_path / "ok", tmp_path / "ok-copy")
    assert [r for r, _, _ in walk_tree(tmp_path / "ok-copy")] == ["/".join(["a"] * MAX_TREE_DEPTH + ["leaf.txt"])]


def test_entries_are_counted_and_their_names_weigh(tmp_path: Path) -> None:
    root = tmp_path / "t"
    root.mkdir()
    for i in range(50):
        (root / f"{i:02d}-{'n' * 200}").touch()
    with pytest.raises(TooManyEntriesError):
        manifest(root, max_entries=49)
    assert len(manifest(root, max_entries=50)) == 50
    # Fifty empty files, but their names and records weigh: 50 x (256 + 203) bytes.
    with pytest.raises(ValueError, match="weighs 22950 bytes"):
        manifest(root, max_bytes=20_000)


def test_an_unchanged_tree_costs_nothing_to_record_again(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    long_dir = workspace.joinpath(*(["d" * 240] * 12))
    long_dir.mkdir(parents=True)
    for i in range(2_000):
        (long_dir / f"{i:05d}-{'f' * 200}").touch()
    log = RevisionLog(tmp_path / "run")
    log.record(workspace)
    first = _run_bytes(tmp_path / "run")
    for _ in range(3):
        log.record(workspace)
    assert _run_bytes(tmp_path / "run") - first < 3 * 200  # three records naming the same tree
    records = [json.loads((log.folder / f"{n}.json").read_text()) for n in log.numbers()]
    assert {r["tree"] for r in records} == {records[0]["tree"]} and all("files" not in r for r in records)
    # The manifest is stored once, content-addressed, and a record loads through it.
    _, tree = log.load(4)
    assert len(tree.entries) == 2_000 and tree.digest == records[0]["tree"]
    assert first < 2_000 * 3_400  # one manifest, not one per record


def test_snapshots_refuse_too_many_entries_with_what_to_do(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    for i in range(MAX_SNAPSHOT_ENTRIES + 1):
        (workspace / str(i)).touch()
    from gym_trainfail.errors import ToolError

    with pytest.raises(ToolError, match=f"more than {MAX_SNAPSHOT_ENTRIES} files, links and folders"):
        snapshot(workspace, ObjectStore(tmp_path / "objects"), exclude=("outputs",))
    assert not (tmp_path / "objects").exists() or not any((tmp_path / "objects").iterdir())


# -- through the env: an error observation, never an exception -----------------------------------


@pytest.fixture
def bwrap_env(echo_case: CaseSpec, runtime: Runtime, bwrap_usable: None, tmp_path: Path) -> Iterator[TrainFailEnv]:
    env = TrainFailEnv(case=echo_case, sandbox="bwrap", runs_root=tmp_path / "runs", grade_on_end=False)
    env.reset(seed=0)
    yield env
    env.close()


def test_a_deep_tree_in_the_workspace_is_an_error_observation(bwrap_env: TrainFailEnv) -> None:
    deep = "/".join(["a"] * 1_100)
    observation = act(bwrap_env, "shell", command=f"mkdir -p {deep} && echo made")
    assert "made" in observation
    assert "could not be checkpointed" in observation and f"more than {MAX_TREE_DEPTH} levels deep" in observation
    observation = act(bwrap_env, "submit")
    assert observation.startswith("error: the workspace has folders nested more than"), observation
    assert act(bwrap_env, "shell", command="rm -rf a && echo gone").startswith("exit code 0")
    assert act(bwrap_env, "submit") == "revision 1 recorded"


def test_many_long_names_grow_the_run_directory_by_one_manifest_at_most(bwrap_env: TrainFailEnv) -> None:
    run_dir = bwrap_env.run_dir
    assert run_dir is not None
    make = (
        "python -c \"import os; d = '/'.join(['d' * 240] * 14); os.makedirs(d); "
        "[open(os.path.join(d, f'{i:05d}' + 'f' * 200), 'w').close() for i in range(15000)]\" && echo made"
    )
    before = _run_bytes(run_dir)
    assert "made" in act(bwrap_env, "shell", command=make)
    for _ in range(3):
        assert act(bwrap_env, "submit").endswith("recorded")
    grown = _run_bytes(run_dir) - before
    # One manifest of 15,000 ~3.6 kB paths, stored once for the checkpoint and all three submits.
    assert 15_000 * 3_400 < grown < 15_000 * 3_900, grown
    assert grown < MAX_SNAPSHOT_BYTES
    # Past the entry bound the tree is refused outright.
    more = "python -c \"[open(f'x{i}', 'w').close() for i in range(6000)]\" && echo more"
    observation = act(bwrap_env, "shell", command=more)
    assert "more" in observation and "could not be checkpointed" in observation
    assert act(bwrap_env, "submit").startswith(f"error: the workspace holds more than {MAX_SNAPSHOT_ENTRIES}")


# -- grading: an error receipt, never an exception -----------------------------------------------


def test_grade_dir_gives_a_deep_tree_an_error_receipt(echo_case: CaseSpec, tmp_path: Path) -> None:
    _deep(tmp_path / "rev", 600)
    receipt = Grader(echo_case, sandbox="process").grade_dir(tmp_path / "rev")
    assert receipt.status == "error" and not receipt.cacheable
    assert {o.status for o in receipt.outcomes} == {"error"}
    assert all("cannot be graded" in o.reason and "folders deep" in o.reason for o in receipt.outcomes)


def test_a_revision_that_cannot_be_restored_is_an_error_receipt(echo_case: CaseSpec, tmp_path: Path) -> None:
    # A record written before trees were bounded (manifest inline) naming a 600-level path.
    log = RevisionLog(tmp_path / "run")
    log.folder.mkdir(parents=True)
    ok = snapshot(_deep(tmp_path / "ws", 2).parent.parent, log.store)
    files = {"/".join(["a"] * 600) + "/x.txt": {"sha256": ok.entries[0].digest, "size": 1, "x": False}}
    from gym_trainfail.hashing import Entry, manifest_digest

    entries = [Entry(path=p, digest=m["sha256"], size=1) for p, m in files.items()]
    digest = manifest_digest(entries)
    (log.folder / "1.json").write_text(json.dumps({"revision": 1, "t": 1.0, "tree": digest, "files": files}))
    receipt = Grader(echo_case, sandbox="process").grade_revision(log, 1, digest)
    assert receipt.status == "error" and "could not be restored" in receipt.outcomes[0].reason


def test_trainfail_grade_tree_refuses_a_deep_tree_with_exit_2(echo_case: CaseSpec, tmp_path: Path) -> None:
    _deep(tmp_path / "rev", 600)
    result = subprocess.run(
        [sys.executable, "-m", "gym_trainfail.cli", "grade", "--case", str(echo_case.root), "--tree",
         str(tmp_path / "rev"), "--sandbox", "process"],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert result.returncode == 2, result.stderr
    assert "cannot be graded as a revision" in result.stderr and "Traceback" not in result.stderr
