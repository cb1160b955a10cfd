"""The host stays responsive and its records stay bounded whatever the agent does in the workspace.

Each test is an attack from issue 10: special files that would block a file tool, sparse files
that would cost a checkpoint minutes of hashing, tool calls big enough to fill the ledger, and
reading the sandbox's own process table for host paths.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import socket
import threading
import time
import tracemalloc
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from gym_trainfail import workspace_fs
from gym_trainfail.cases import CaseSpec
from gym_trainfail.env import TrainFailEnv, read_transcript
from gym_trainfail.errors import ToolError
from gym_trainfail.ledger import read_events
from gym_trainfail.paths import home
from gym_trainfail.runtimes import Runtime
from gym_trainfail.workspace_fs import WorkspaceFiles

BACKENDS = ["bwrap", "process", pytest.param("docker", marks=pytest.mark.docker)]


@pytest.fixture(params=BACKENDS)
def any_env(
    request: pytest.FixtureRequest, echo_case: CaseSpec, runtime: Runtime, bwrap_usable: None, tmp_path: Path
) -> Iterator[TrainFailEnv]:
    if request.param == "docker":
        from tests.test_arms import require_image

        require_image("control")
    env = TrainFailEnv(case=echo_case, sandbox=request.param, runs_root=tmp_path / "runs", grade_on_end=False)
    yield env
    env.close()


@pytest.fixture
def files(tmp_path: Path) -> WorkspaceFiles:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "a.py").write_text("x = 1\n")
    (tmp_path / "secret.txt").write_text("host secret")
    return WorkspaceFiles(root, "/workspace")


def act(env: TrainFailEnv, tool: str, **arguments: Any) -> str:
    return env.step({"tool": tool, "arguments": arguments})[0]


def workspace(env: TrainFailEnv) -> Path:
    assert env.run_dir is not None
    return env.run_dir / "workspace"


def within(seconds: float, call: Callable[[], Any], fifo: Path) -> Any:
    """``call()``'s result, failing (not hanging) if it is still blocked after ``seconds``."""
    outcome: dict[str, Any] = {}

    def target() -> None:
        try:
            outcome["value"] = call()
        except BaseException as exc:  # noqa: BLE001 - handed back to the test thread
            outcome["error"] = exc

    worker = threading.Thread(target=target, daemon=True)
    worker.start()
    worker.join(seconds)
    if worker.is_alive():
        # Open the FIFO's other ends so a blocked writer or reader returns and the test goes on.
        ends = [os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)]
        with contextlib.suppress(OSError):
            ends.append(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        worker.join(10)
        for end in ends:
            os.close(end)
        pytest.fail(f"the file tool blocked on the special file {fifo.name} for more than {seconds} s")
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]


# -- 4: file tools never block on special files -----------------------------------------------


def test_write_and_edit_refuse_a_fifo_without_blocking(any_env: TrainFailEnv) -> None:
    any_env.reset(seed=0)
    act(any_env, "shell", command="mkfifo f && ln -s f lf")
    fifo = workspace(any_env) / "f"
    for tool, arguments in [
        ("write_file", {"path": "f", "content": "x"}),
        ("write_file", {"path": "lf", "content": "x"}),
        ("edit_file", {"path": "f", "old_text": "a", "new_text": "b"}),
        ("edit_file", {"path": "lf", "old_text": "a", "new_text": "b"}),
        ("read_file", {"path": "lf"}),
    ]:
        observation = within(10, functools.partial(act, any_env, tool, **arguments), fifo)
        assert observation.startswith(f"error: {arguments['path']!r} is not a regular file (a FIFO)"), observation
    assert act(any_env, "shell", command="echo still here").endswith("still here")


def test_file_tools_refuse_sockets_and_links_to_them(files: WorkspaceFiles) -> None:
    server = socket.socket(socket.AF_UNIX)
    with contextlib.closing(server):
        server.bind(str(files.root / "sock"))
        os.symlink("sock", files.root / "lsock")
        for path in ("sock", "lsock"):
            with pytest.raises(ToolError, match=r"is not a regular file \(a socket\)"):
                files.write(path, "x")
            with pytest.raises(ToolError, match=r"is not a regular file \(a socket\)"):
                files.edit(path, "a", "b")
            with pytest.raises(ToolError, match=r"is not a regular file \(a socket\)"):
                files.read(path)


@pytest.mark.parametrize("swap", ["fifo", "symlink-out"])
def test_a_file_swapped_after_the_check_is_not_opened(
    files: WorkspaceFiles, monkeypatch: pytest.MonkeyPatch, swap: str
) -> None:
    """The race between checking a path and opening it: the path changes in between."""
    target = files.root / "a.py"
    secret = files.root.parent / "secret.txt"
    real_mkdir = Path.mkdir

    def mkdir_then_swap(self: Path, *args: Any, **kwargs: Any) -> None:
        real_mkdir(self, *args, **kwargs)
        if target.exists() and not target.is_symlink() and target.is_file():
            target.unlink()
            if swap == "fifo":
                os.mkfifo(target)
            else:
                os.symlink(secret, target)

    monkeypatch.setattr(Path, "mkdir", mkdir_then_swap)
    with pytest.raises(ToolError, match="is not a regular file"):
        within(10, lambda: files.write("a.py", "pwned"), target)
    assert secret.read_text() == "host secret"


@pytest.mark.parametrize("swap", ["fifo", "symlink-out"])
def test_the_open_itself_refuses_what_the_check_missed(
    files: WorkspaceFiles, monkeypatch: pytest.MonkeyPatch, swap: str
) -> None:
    """The last line of defence: the path changed right after its lstat (here: lstat is blind)."""
    target = files.root / "a.py"
    secret = files.root.parent / "secret.txt"
    target.unlink()
    if swap == "fifo":
        os.mkfifo(target)
    else:
        os.symlink(secret, target)
    monkeypatch.setattr(workspace_fs, "_lstat", lambda path: None, raising=False)
    monkeypatch.setattr(workspace_fs.WorkspaceFiles, "resolve", lambda self, path, must_exist=False: target)
    for call in (lambda: files.write("a.py", "pwned"), lambda: files.read("a.py")):
        with pytest.raises(ToolError, match="is not a regular file"):
            within(10, call, target)
    assert secret.read_text() == "host secret"


# -- 6: sizes are looked at before anything is hashed or read ---------------------------------


def test_a_sparse_20g_file_costs_no_hashing(any_env: TrainFailEnv) -> None:
    any_env.reset(seed=0)
    assert act(any_env, "shell", command="echo changed > note.txt").endswith("exit code 0")
    assert any_env.run_dir is not None
    checkpoint = (any_env.run_dir / "checkpoint.json").read_text()
    started = time.monotonic()
    act(any_env, "shell", command="truncate -s 20G big")
    stepped = time.monotonic() - started
    started = time.monotonic()
    observation = act(any_env, "submit")
    submitted = time.monotonic() - started
    assert stepped < 5 and submitted < 5, (stepped, submitted)
    assert observation.startswith("error: the workspace holds 20480 MiB of files, above the 256 MiB"), observation
    assert "largest: big (20480 MiB)" in observation
    # The checkpoint keeps the last state it could record, as the size limit says.
    assert (any_env.run_dir / "checkpoint.json").read_text() == checkpoint


def _sparse(path: Path, size: int, head: bytes = b"") -> Path:
    path.write_bytes(head)
    os.truncate(path, size)
    return path


def _peak_bytes(call: Callable[[], Any]) -> int:
    tracemalloc.start()
    try:
        with contextlib.suppress(ToolError):
            call()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_read_file_of_a_sparse_file_reads_only_a_prefix(files: WorkspaceFiles) -> None:
    _sparse(files.root / "zeros", 3 << 30)
    with pytest.raises(ToolError, match=r"'zeros' is a binary file \(3221225472 bytes\)"):
        files.read("zeros")
    assert _peak_bytes(lambda: files.read("zeros")) < 1 << 20


def test_large_text_files_are_refused_before_they_are_read(files: WorkspaceFiles) -> None:
    _sparse(files.root / "log.txt", 1 << 30, head=b"step 1 loss 2.0\n" * 1000)
    expected = (
        "'log.txt' is 1073741824 bytes, more than the 16 MiB the file tools read at once; "
        "read a part of it with the shell tool (e.g. `sed -n '1,200p' log.txt`)"
    )
    calls: list[Callable[[], object]] = [
        lambda: files.read("log.txt"),
        lambda: files.edit("log.txt", "loss", "LOSS"),
    ]
    for call in calls:
        with pytest.raises(ToolError) as refused:
            call()
        assert str(refused.value) == expected
        assert _peak_bytes(call) < 1 << 20
    assert workspace_fs.MAX_TEXT_FILE_BYTES == 16 << 20


# -- 8: tool calls are recorded in bounded size -----------------------------------------------


def _record_bytes(run_dir: Path) -> int:
    return sum((run_dir / name).stat().st_size for name in ("ledger.jsonl", "transcript.jsonl"))


def test_huge_arguments_are_recorded_as_bounded_previews(echo_env: TrainFailEnv) -> None:
    echo_env.reset(seed=0)
    run_dir = echo_env.run_dir
    assert run_dir is not None
    act(echo_env, "shell", command="true")
    before = _record_bytes(run_dir)
    # Over the write's own limit (2 MiB) but within the action size rule (2,500,000 characters):
    # the call is parsed, refused by write_file, and recorded as a bounded preview with a digest;
    # its whole text is kept once in the object store (calls up to 4 MiB are), however often sent.
    huge = "A" * 2_400_000
    for _ in range(2):
        assert act(echo_env, "write_file", path="x.txt", content=huge).startswith("error: content is 2400000 bytes")
    assert _record_bytes(run_dir) - before < 50_000
    step = [e for e in read_events(run_dir / "ledger.jsonl") if e["event"] == "step"][-1]
    digest = hashlib.sha256(huge.encode()).hexdigest()
    assert step["arguments"]["path"] == "x.txt"
    assert step["arguments"]["content"].startswith("A" * 2000) and len(step["arguments"]["content"]) < 2200
    assert step["elided"] == {"content": {"chars": 2_400_000, "bytes": 2_400_000, "sha256": digest, "stored": True}}
    assert (run_dir / "objects" / digest[:2] / digest[2:]).stat().st_size == 2_400_000
    record = read_transcript(run_dir)[-1]
    assert (record["arguments"], record["elided"]) == (step["arguments"], step["elided"])
    # Past the action size rule the call is refused before it is parsed into arguments; its record
    # stays as small.
    before = _record_bytes(run_dir)
    observation = act(echo_env, "write_file", path="x.txt", content="A" * (10 * 10**6))
    assert observation.startswith("error: the action is 10,000,063 characters; the limit is 2,500,000")
    assert _record_bytes(run_dir) - before < 50_000

    # A large call that can take effect is kept whole, once, in the run's object store: the
    # same blob as the file it wrote, so the checkpoint does not store it a second time.
    content = "".join(f"line {i}\n" for i in range(100_000))
    assert act(echo_env, "write_file", path="y.txt", content=content).startswith("created y.txt")
    step = [e for e in read_events(run_dir / "ledger.jsonl") if e["event"] == "step"][-1]
    digest = step["elided"]["content"]["sha256"]
    assert step["elided"]["content"]["stored"] is True
    blob = run_dir / "objects" / digest[:2] / digest[2:]
    assert blob.read_text() == content
    checkpoint = json.loads((run_dir / "checkpoint.json").read_text())
    manifest = json.loads((run_dir / "objects" / checkpoint["tree"][:2] / checkpoint["tree"][2:]).read_text())
    assert manifest["y.txt"]["sha256"] == digest


# -- 9: the sandbox cannot read host paths from its own process table -------------------------


def test_bwraps_arguments_hold_no_host_paths(echo_env: TrainFailEnv, runtime: Runtime) -> None:
    echo_env.reset(seed=0)
    assert echo_env.run_dir is not None
    observation = act(
        echo_env,
        "shell",
        command="tr '\\0' ' ' < /proc/1/cmdline; echo; tr '\\0' ' ' < /proc/self/cmdline; echo; "
        "tr '\\0' '\\n' < /proc/1/environ; ls -l /proc/1/fd /proc/self/fd",
    )
    assert observation.startswith("exit code 0") and "--args" in observation, observation
    for host_path in (str(echo_env.run_dir), str(home()), str(runtime.root), os.environ["PATH"]):
        assert host_path not in observation
    if Path.cwd() != Path("/"):
        assert str(Path.cwd()) not in observation
    assert "memfd" not in observation  # bwrap closed the argument file before the command ran
