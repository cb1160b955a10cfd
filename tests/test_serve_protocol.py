"""``trainfail serve``'s rules without a server: frames, the action size rule, routes, limits.

Each rule here is attacked over real sockets in tests/test_serve_hostile.py; these pin the rule
itself (what a frame becomes, how an action is measured, which routes exist, how the open-file
limit is shared).
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from gym_trainfail.cases import CaseSpec
from gym_trainfail.devices import DevicePool
from gym_trainfail.errors import ToolError, TrainFailError
from gym_trainfail.serve.app import ROUTES, build_app, served_routes
from gym_trainfail.serve.claims import (
    CLOSING_WAIT_S,
    EpisodeBusyError,
    EpisodeClaim,
    claim_existing,
    claim_new,
    is_claimed,
)
from gym_trainfail.serve.guard import (
    FDS_PER_SESSION,
    MIN_GUARDED,
    Gate,
    RepeatFilter,
    Tally,
    accept_error_handler,
    fd_budget,
)
from gym_trainfail.serve.models import MAX_ACTION_CHARS
from gym_trainfail.serve.protocol import (
    INVALID_JSON,
    MAX_DEPTH,
    UNKNOWN_TYPE,
    VALIDATION_ERROR,
    Close,
    Refusal,
    Reset,
    StateRequest,
    Step,
    depth,
    parse_frame,
)
from gym_trainfail.serve.session import ServeConfig
from gym_trainfail.tools import ACTION_MAX_TEXT_CHARS, action_chars, parse_action, tool_specs

DOCS = Path(__file__).resolve().parents[1] / "docs" / "serving.md"
TOKEN = "test-serve-token-5d1c8e7f3a9b2c4d"
SPECS = tool_specs("/workspace", "4 CPU slots", 64_000)


# -- frames -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("frame", "code", "says"),
    [
        ("[]", INVALID_JSON, "a JSON list, not an object"),
        ("1", INVALID_JSON, "a JSON int, not an object"),
        ("null", INVALID_JSON, "a JSON null, not an object"),
        ('"reset"', INVALID_JSON, "a JSON str, not an object"),
        ("{not json", INVALID_JSON, "not JSON"),
        (b'{"type": "state"}', INVALID_JSON, "binary frames are not part of this protocol"),
        (b"\x00\xff", INVALID_JSON, "binary frames"),
        ("[" * 100_000 + "]" * 100_000, VALIDATION_ERROR, f"deeper than {MAX_DEPTH} levels"),
        ('{"type": "step", "data": ' + '{"a": ' * 40 + "1" + "}" * 40 + "}", VALIDATION_ERROR, "deeper than"),
        (
            '{"type": "mcp", "data": {"jsonrpc": "2.0", "method": "openenv/session/create", "id": 1}}',
            UNKNOWN_TYPE,
            "message type 'mcp' is not served here",
        ),  # fmt: skip
        ('{"type": 5}', UNKNOWN_TYPE, "a int"),
        ('{"data": {}}', UNKNOWN_TYPE, "a NoneType"),
        ('{"type": "state", "data": {}}', VALIDATION_ERROR, "takes only ['type']"),
        ('{"type": "reset", "session_id": "x"}', VALIDATION_ERROR, "not ['session_id']"),
        ('{"type": "step"}', VALIDATION_ERROR, 'needs "data"'),
        ('{"type": "reset", "data": [1]}', VALIDATION_ERROR, "must be an object, not list"),
    ],
)
def test_frames_that_are_not_messages_are_refused_with_a_reason(frame: str | bytes, code: str, says: str) -> None:
    refusal = parse_frame(frame)
    assert isinstance(refusal, Refusal), refusal
    assert refusal.code == code
    assert says in refusal.message, refusal.message
    assert len(refusal.message) < 400  # never echoes the frame


def test_messages_parse_to_their_kind() -> None:
    assert parse_frame('{"type": "state"}') == StateRequest()
    assert parse_frame('{"type": "close"}') == Close()
    assert parse_frame('{"type": "reset"}') == Reset(options={})
    assert parse_frame('{"type": "reset", "data": {"resume": "x"}}') == Reset(options={"resume": "x"})
    step = parse_frame('{"type": "step", "data": {"tool": "list_files", "arguments": {}}}')
    assert isinstance(step, Step) and step.action.tool == "list_files" and step.action.invalid is None
    # An action that misfits the action schema is still a step (the env records it as an error).
    bad = parse_frame('{"type": "step", "data": {"tool": 5}}')
    assert isinstance(bad, Step) and bad.action.invalid is not None and "tool" in bad.action.invalid
    forged = parse_frame('{"type": "step", "data": {"tool": "list_files", "invalid": "no"}}')
    assert isinstance(forged, Step) and "set by the server" in str(forged.action.invalid)
    # Nesting up to the bound is fine (tool arguments are flat; this is far more than they need).
    nested = '{"type": "step", "data": {"tool": "x", "arguments": {"a": ' + "[" * 28 + "]" * 28 + "}}}"
    assert isinstance(parse_frame(nested), Step)


def test_depth_walks_without_recursion() -> None:
    assert depth(1) == 0 and depth([]) == 1 and depth({"a": [1, {"b": 2}]}) == 3
    deep: Any = 0
    for _ in range(50_000):  # far past Python's recursion limit
        deep = [deep]
    assert depth(deep) == MAX_DEPTH + 1  # it stops counting past the bound


# -- one action size rule ---------------------------------------------------------------------


def write(content: str) -> dict[str, Any]:
    return {"tool": "write_file", "arguments": {"path": "big.txt", "content": content}}


def test_action_size_counts_each_character_once_however_it_is_escaped() -> None:
    cjk = write("中" * 450_000)
    overhead = action_chars(write(""))
    assert action_chars(cjk) == overhead + 450_000
    assert action_chars(write("😀" * 1000)) == overhead + 1000  # outside the BMP: one each, not 12
    escaped = json.dumps(cjk)  # what OpenEnv's client sends: 6 characters per CJK character
    assert len(escaped) > MAX_ACTION_CHARS
    # The same action, as a dict or as escaped JSON text, is the same call.
    assert parse_action(cjk, SPECS) == parse_action(escaped, SPECS)


def test_an_action_over_the_limit_gets_the_same_refusal_as_dict_or_text() -> None:
    over = write("中" * MAX_ACTION_CHARS)
    size = action_chars(over)
    answers = []
    for form in (over, json.dumps(over), json.dumps(over, ensure_ascii=False)):
        with pytest.raises(ToolError) as caught:
            parse_action(form, SPECS)
        answers.append(str(caught.value))
    assert answers == [answers[0]] * 3
    assert answers[0].startswith(f"the action is {size:,} characters; the limit is {MAX_ACTION_CHARS:,}")
    at_limit = write("x" * (MAX_ACTION_CHARS - action_chars(write(""))))
    assert action_chars(at_limit) == MAX_ACTION_CHARS
    assert parse_action(at_limit, SPECS).tool == "write_file"


def test_absurd_action_text_is_refused_before_parsing() -> None:
    with pytest.raises(ToolError, match="the action text is"):
        parse_action(" " * (ACTION_MAX_TEXT_CHARS + 1), SPECS)
    with pytest.raises(ToolError, match="nests too deeply"):
        parse_action("[" * 100_000 + "]" * 100_000, SPECS)
    circular: dict[str, Any] = {"tool": "list_files"}
    circular["arguments"] = {"self": circular}
    with pytest.raises(ToolError, match="cannot be written as JSON"):
        parse_action(circular, SPECS)


# -- routes -----------------------------------------------------------------------------------


def documented_routes() -> list[tuple[str, str]]:
    """The routes table of docs/serving.md ("| `GET /health` | ... |")."""
    section = DOCS.read_text().split("### Routes", 1)[1].split("\n### ", 1)[0]
    return sorted((kind, path) for kind, path in re.findall(r"^\| `(GET|POST|WebSocket) (/\S*)` \|", section, re.M))


def test_the_app_serves_exactly_the_documented_routes_whatever_the_environment(
    echo_case: CaseSpec, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # OpenEnv's create_app serves /web/* with this set, and stateless /reset, /step, /state in simulation mode.
    monkeypatch.setenv("ENABLE_WEB_INTERFACE", "true")
    monkeypatch.setenv("OPENENV_MODE", "simulation")
    config = ServeConfig(
        cases={echo_case.id: echo_case},
        arms=("control",),
        sandbox="bwrap",
        runs_root=tmp_path,
        pool=DevicePool(kind="cpu", count=2, root=tmp_path / "devices"),
    )
    app = build_app(config, TOKEN, max_sessions=2)
    assert served_routes(app) == sorted(ROUTES) == documented_routes()
    assert ("WebSocket", "/ws") in ROUTES and not any("mcp" in path or "web" in path for _, path in ROUTES)


# -- limits before the token ------------------------------------------------------------------


def test_the_fd_budget_keeps_a_reserve_per_session_and_refuses_too_low_a_limit() -> None:
    budget = fd_budget(8, open_files=1024, in_use=40)
    assert budget.connections == 1024 - 40 - 8 * FDS_PER_SESSION - 64 - 64
    assert fd_budget(1, open_files=1 << 20, in_use=40).connections == 512  # capped
    small = fd_budget(1, open_files=256, in_use=20)
    assert small.connections >= MIN_GUARDED
    with pytest.raises(
        TrainFailError, match=r"open-file limit is 256.*raise it \(ulimit -n 1024\) or lower --max-sessions"
    ):
        fd_budget(4, open_files=256, in_use=20)
    assert "8 x 64 kept for sessions" in budget.describe()


class FakeConnection:
    """What :class:`Gate` needs of a connection: its loop and a way to drop it."""

    def __init__(self, gate: Gate) -> None:
        self.gate, self.loop, self.dropped = gate, None, False

    def drop(self) -> None:
        self.dropped = True
        self.gate.leave(self)  # type: ignore[arg-type]


def test_the_gate_evicts_the_oldest_connection_still_sending_its_request() -> None:
    gate = Gate(limit=3)
    first, second, third = (FakeConnection(gate) for _ in range(3))
    for connection in (first, second, third):
        assert gate.admit(connection)  # type: ignore[arg-type]
    gate.request_in(first)  # type: ignore[arg-type]  # its headers are in: the token decides now, it is not evicted
    newcomer = FakeConnection(gate)
    assert gate.admit(newcomer)  # type: ignore[arg-type]
    assert second.dropped and not first.dropped and not third.dropped
    assert gate.guarded == 3
    for connection in (third, newcomer):
        gate.request_in(connection)  # type: ignore[arg-type]
    # Every guarded connection has sent its request: a newcomer is refused, nothing is evicted.
    assert not gate.admit(FakeConnection(gate))  # type: ignore[arg-type]
    assert gate.guarded == 3 and not first.dropped
    assert sum(gate.tally.total.values()) == 2


def test_the_tally_logs_one_line_per_interval(caplog: pytest.LogCaptureFixture) -> None:
    tally = Tally("connections dropped", interval_s=3600)
    with caplog.at_level("WARNING", logger="gym_trainfail.serve"):
        for _ in range(1000):
            tally.note("timed out")
    assert len(caplog.records) == 1  # the first; the other 999 wait for the interval
    assert tally.total["timed out"] == 1000 and tally.counts["timed out"] == 999


def test_failed_accepts_and_repeated_warnings_are_counted_not_logged_each(caplog: pytest.LogCaptureFixture) -> None:
    tally = Tally("connections dropped", interval_s=3600)
    handle = accept_error_handler(tally)
    loop = asyncio.new_event_loop()
    try:
        with caplog.at_level("WARNING"):
            for _ in range(500):  # what asyncio reports for each accept() that hits EMFILE
                handle(
                    loop,
                    {
                        "message": "socket.accept() out of system resource",
                        "exception": OSError(24, "Too many open files"),
                    },
                )
    finally:
        loop.close()
    assert len(caplog.records) == 1 and "accept() failed (Too many open files)" in caplog.records[0].getMessage()
    assert tally.total["accept() failed (Too many open files)"] == 500
    repeats = RepeatFilter(interval_s=3600)
    bad_request = "Invalid HTTP request received."
    records = [
        logging.LogRecord("uvicorn.error", logging.WARNING, __file__, 1, bad_request, None, None) for _ in range(500)
    ]
    assert [repeats.filter(record) for record in records].count(True) == 1
    other = logging.LogRecord("uvicorn.error", logging.WARNING, __file__, 1, "another message", None, None)
    assert repeats.filter(other)


# -- one holder per episode -------------------------------------------------------------------


def test_a_claim_excludes_other_holders_and_dies_with_its_process(tmp_path: Path) -> None:
    (tmp_path / "held").mkdir()
    claim = claim_existing(tmp_path, "held")
    started = time.monotonic()
    with pytest.raises(EpisodeBusyError, match="episode 'held' is open in another session"):
        claim_existing(tmp_path, "held")  # an open holder: refused at once, without waiting
    assert time.monotonic() - started < CLOSING_WAIT_S
    with pytest.raises(TrainFailError, match="episode 'held' exists"):
        claim_new(tmp_path, "held")
    with pytest.raises(TrainFailError, match="no resumable episode 'absent'"):
        claim_existing(tmp_path, "absent")
    (tmp_path / "link").symlink_to(tmp_path / "held")
    with pytest.raises(TrainFailError, match="no resumable episode 'link'"):
        claim_existing(tmp_path, "link")  # an id names a folder, never a link
    claim.release()
    claim.release()  # idempotent
    claim_existing(tmp_path, "held").release()
    # A holder in another process that dies (SIGKILL) leaves nothing behind.
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(tmp_path / "held")], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        assert is_claimed(tmp_path / "held")
        with pytest.raises(EpisodeBusyError):
            claim_existing(tmp_path, "held")
    finally:
        holder.kill()
        holder.wait(30)
    claim_existing(tmp_path, "held").release()


HOLDER = """
import fcntl, os, sys, time
fd = os.open(sys.argv[1], os.O_RDONLY | os.O_DIRECTORY)
fcntl.flock(fd, fcntl.LOCK_EX)
print("held", flush=True)
time.sleep(600)
"""


def test_a_claimant_waits_for_a_holder_that_is_closing(tmp_path: Path) -> None:
    (tmp_path / "closing").mkdir()
    holder = claim_existing(tmp_path, "closing")
    holder.closing()  # e.g. the session of a dropped connection, closing its episode
    claimed: list[EpisodeClaim] = []
    waiter = threading.Thread(target=lambda: claimed.append(claim_existing(tmp_path, "closing")))
    waiter.start()
    waiter.join(0.5)
    assert waiter.is_alive() and claimed == []  # waiting, not refused
    holder.release()
    waiter.join(60)
    assert len(claimed) == 1 and claimed[0].held
    claimed[0].release()
