"""``trainfail serve`` against a hostile client (issue 39), over real sockets on loopback.

Each test attacks one rule: one holder per episode (concurrent resets), no route or message
type past the documented ones (MCP, the web interface), one action size rule in-process and
over the server, large frames parsed off the event loop, malformed frames, the second signal,
and a flood of half-open sockets under a low open-file limit. Every wait is bounded; servers
listen on 127.0.0.1 only.
"""

from __future__ import annotations

import contextlib
import json
import os
import resource
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import pytest
from openenv.core.generic_client import GenericEnvClient
from websockets.exceptions import ConnectionClosed, InvalidStatus
from websockets.sync.client import ClientConnection, connect

import gym_trainfail.serve.app as app_module
from gym_trainfail.cases import CaseSpec
from gym_trainfail.devices import DevicePool
from gym_trainfail.env import TrainFailEnv, read_transcript
from gym_trainfail.errors import TrainFailError
from gym_trainfail.ledger import read_events
from gym_trainfail.runtimes import Runtime
from gym_trainfail.sandbox.disk import is_mounted
from gym_trainfail.serve import TrainFailAction, TrainFailClient, protocol
from gym_trainfail.serve.app import build_app, make_server
from gym_trainfail.serve.guard import Gate
from gym_trainfail.serve.models import MAX_ACTION_CHARS
from gym_trainfail.serve.session import EpisodeSession, ServeConfig
from tests.conftest import ECHO_CASE
from tests.test_serve import read_line

TOKEN = "test-serve-token-5d1c8e7f3a9b2c4d"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
START_TIMEOUT_S = 180
#: Sessions of the module's server: small, so the session cap can be exhausted.
HOSTILE_SESSIONS = 4


@dataclass
class Served:
    url: str
    runs: Path
    process: subprocess.Popen[str]
    stderr: Path

    @property
    def ws_url(self) -> str:
        return self.url.replace("http://", "ws://") + "/ws"

    def client(self) -> Any:
        return TrainFailClient(base_url=self.url, token=TOKEN, message_timeout_s=300).sync()


def start(
    tmp: Path, max_sessions: int, env: dict[str, str] | None = None, preexec: Callable[[], None] | None = None
) -> Served:
    """The real ``trainfail serve`` (bwrap, the echo case) on a free loopback port."""
    runs, stderr = tmp / "runs", tmp / "serve.err"
    command = [sys.executable, "-m", "gym_trainfail.cli", "serve", "--cases", str(ECHO_CASE), "--sandbox", "bwrap",
               "--port", "0", "--runs", str(runs), "--max-sessions", str(max_sessions)]  # fmt: skip
    environment = {**os.environ, "TRAINFAIL_SERVE_TOKEN": TOKEN, **(env or {})}
    process = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=stderr.open("w"), env=environment, text=True, preexec_fn=preexec
    )
    ready = read_line(process, START_TIMEOUT_S)
    if not ready:
        process.kill()
        pytest.fail(f"trainfail serve did not start within {START_TIMEOUT_S} s: {stderr.read_text()[-2000:]}")
    return Served(url=json.loads(ready)["url"], runs=runs, process=process, stderr=stderr)


def stop(served: Served) -> None:
    if served.process.poll() is None:
        served.process.send_signal(signal.SIGTERM)
        try:
            served.process.wait(120)
        finally:
            if served.process.poll() is None:
                served.process.kill()
                served.process.wait(30)


def http(method: str, url: str, body: bytes | None = None) -> int:
    request = urllib.request.Request(url, data=body, method=method, headers=AUTH)
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return int(response.status)
    except urllib.error.HTTPError as exc:
        return exc.code


def raw_ws(url: str) -> ClientConnection:
    return connect(url, additional_headers=AUTH, proxy=None, max_size=None, open_timeout=30, compression=None)


def ask(ws: ClientConnection, frame: str | bytes | dict[str, Any]) -> dict[str, Any]:
    """Send one frame, return the reply frame."""
    ws.send(json.dumps(frame) if isinstance(frame, dict) else frame)
    reply: dict[str, Any] = json.loads(ws.recv(timeout=120))
    return reply


def open_sessions(served: Served) -> int:
    request = urllib.request.Request(f"{served.url}/cases", headers=AUTH)
    with urllib.request.urlopen(request, timeout=30) as response:
        return int(json.loads(response.read())["open_sessions"])


def wait_for(condition: Callable[[], bool], what: str, timeout_s: float = 60) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def finishes(ledger: Path) -> int:
    return sum(e["event"] == "finish" for e in read_events(ledger)) if ledger.is_file() else 0


def act(env: Any, tool: str, **arguments: Any) -> Any:
    return env.step(TrainFailAction(tool=tool, arguments=arguments))


@pytest.fixture(scope="module")
def hostile(runtime: Runtime, bwrap_usable: None, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """A server started with the variables that turn on OpenEnv's web interface and HTTP routes."""
    served = start(
        tmp_path_factory.mktemp("hostile"),
        HOSTILE_SESSIONS,
        env={"ENABLE_WEB_INTERFACE": "true", "OPENENV_MODE": "simulation"},
    )
    yield served
    stop(served)


@pytest.fixture
def idle(hostile: Served) -> Served:
    """The module's server with every session of earlier tests closed."""
    wait_for(lambda: open_sessions(hostile) == 0, "earlier tests' sessions to close")
    return hostile


def serve_config(echo_case: CaseSpec, runs: Path) -> ServeConfig:
    return ServeConfig(
        cases={echo_case.id: echo_case},
        arms=("control",),
        sandbox="bwrap",
        runs_root=runs,
        pool=DevicePool(backend="bwrap"),
    )


def race(calls: list[Callable[[], Any]], refusals: tuple[type[BaseException], ...]) -> dict[int, str]:
    """Run ``calls`` at once (behind a barrier); per call "won", or the message it was refused with."""
    barrier = threading.Barrier(len(calls), timeout=60)
    outcomes: dict[int, str] = {}

    def contend(index: int) -> None:
        barrier.wait()
        try:
            calls[index]()
            outcomes[index] = "won"
        except refusals as exc:
            outcomes[index] = str(exc)

    threads = [threading.Thread(target=contend, args=(i,)) for i in range(len(calls))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert len(outcomes) == len(calls), outcomes
    return outcomes


# -- 1. one holder per episode ----------------------------------------------------------------


def ledger_segments(events: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """The ledger cut at each reset/resume: one segment per holder."""
    segments: list[list[dict[str, Any]]] = []
    for event in events:
        if event["event"] in ("reset", "resume") or not segments:
            segments.append([])
        segments[-1].append(event)
    return segments


def assert_clean_ledger(ledger: Path, holders: int) -> None:
    """``holders`` holders one after another: one resume/suspension pair each after the first,
    step indices 1, 2, ... without a repeat, exactly one finish per holder."""
    events = read_events(ledger)
    assert sum(e["event"] == "resume" for e in events) == holders - 1
    assert sum(e["event"] == "suspension" for e in events) == holders - 1
    assert [e["index"] for e in events if e["event"] == "step"] == list(range(1, holders + 1))
    segments = ledger_segments(events)
    assert len(segments) == holders
    assert [sum(e["event"] == "finish" for e in segment) for segment in segments] == [1] * holders


def test_concurrent_resets_of_one_episode_have_exactly_one_winner(
    runtime: Runtime, bwrap_usable: None, echo_case: CaseSpec, tmp_path: Path
) -> None:
    config = serve_config(echo_case, tmp_path / "runs")
    first = EpisodeSession(config)
    first.reset(episode_id="contested")
    first.step(TrainFailAction(tool="write_file", arguments={"path": "holder.txt", "content": "0"}))
    first.close()
    rounds, contenders = 4, 6
    for round_ in range(1, rounds + 1):
        sessions = [EpisodeSession(config) for _ in range(contenders)]
        outcomes = race([partial(session.reset, resume="contested") for session in sessions], (TrainFailError,))
        winners = [i for i, outcome in outcomes.items() if outcome == "won"]
        assert len(winners) == 1, outcomes
        losers = {outcome for outcome in outcomes.values() if outcome != "won"}
        assert losers == {
            "episode 'contested' is open in another session; close that session (or wait for it to end) "
            "and resume it again"
        }
        winner = sessions[winners[0]]
        observation = winner.step(
            TrainFailAction(tool="write_file", arguments={"path": "holder.txt", "content": str(round_)})
        )
        assert observation.info["step"] == round_ + 1 and not observation.info["error"]
        for session in sessions:
            session.close()
    assert_clean_ledger(tmp_path / "runs" / "contested" / "ledger.jsonl", holders=rounds + 1)
    assert (tmp_path / "runs" / "contested" / "workspace" / "holder.txt").read_text() == str(rounds)


def test_concurrent_new_episodes_with_one_id_have_exactly_one_winner(
    runtime: Runtime, bwrap_usable: None, echo_case: CaseSpec, tmp_path: Path
) -> None:
    config = serve_config(echo_case, tmp_path / "runs")
    sessions = [EpisodeSession(config) for _ in range(5)]
    outcomes = race([partial(session.reset, episode_id="same-new-id") for session in sessions], (TrainFailError,))
    try:
        assert sorted(outcomes.values()).count("won") == 1, outcomes
        assert all("exists" in o or "open in another session" in o for o in outcomes.values() if o != "won")
    finally:
        for session in sessions:
            session.close()
    assert sum(e["event"] == "reset" for e in read_events(tmp_path / "runs" / "same-new-id" / "ledger.jsonl")) == 1


def test_concurrent_resumes_over_websockets_have_one_winner_and_no_raw_errno(idle: Served) -> None:
    with idle.client() as env:
        env.reset(episode_id="ws-contested")
        act(env, "write_file", path="holder.txt", content="0")
    wait_for(lambda: open_sessions(idle) == 0, "the first holder's session to close")
    rounds = 3
    for round_ in range(1, rounds + 1):
        clients = [
            GenericEnvClient(base_url=idle.url, headers=AUTH, message_timeout_s=300).sync()
            for _ in range(HOSTILE_SESSIONS)
        ]
        for client in clients:
            client.connect()
        outcomes = race([partial(client.reset, resume="ws-contested") for client in clients], (RuntimeError,))
        try:
            winners = [i for i, outcome in outcomes.items() if outcome == "won"]
            assert len(winners) == 1, outcomes
            for outcome in outcomes.values():
                if outcome != "won":
                    assert "episode 'ws-contested' is open in another session" in outcome
                    assert "Errno" not in outcome and "EXECUTION_ERROR" in outcome
            result = clients[winners[0]].step(
                {"tool": "write_file", "arguments": {"path": "holder.txt", "content": str(round_)}}
            )
            assert result.observation["info"]["step"] == round_ + 1
        finally:
            for client in clients:
                client.close()
        wait_for(lambda: open_sessions(idle) == 0, "the round's connections to close")
    ledger = idle.runs / "ws-contested" / "ledger.jsonl"
    wait_for(lambda: finishes(ledger) == rounds + 1, "the last holder's episode to close")
    assert_clean_ledger(ledger, holders=rounds + 1)


# -- 2. only the documented routes; MCP cannot touch the session cap --------------------------


def test_no_route_past_the_documented_ones_even_with_the_web_interface_variable(idle: Served) -> None:
    for path in ("/health", "/metadata", "/schema", "/cases"):
        assert http("GET", idle.url + path) == 200, path
    undocumented = [
        ("GET", "/web"), ("GET", "/web/"), ("POST", "/web/reset"), ("POST", "/web/step"), ("GET", "/web/state"),
        ("POST", "/mcp"), ("GET", "/mcp"), ("POST", "/reset"), ("POST", "/step"), ("GET", "/state"),
        ("GET", "/docs"), ("GET", "/redoc"), ("GET", "/openapi.json"), ("GET", "/list_environments"),
        ("GET", "/gym-trainfail/splits"), ("POST", "/gym-trainfail/tasks"), ("GET", "/ws"),
    ]  # fmt: skip
    for method, path in undocumented:
        body = b'{"jsonrpc": "2.0", "method": "openenv/session/create", "id": 1}' if method == "POST" else None
        assert http(method, idle.url + path, body) == 404, (method, path)
    base = idle.url.replace("http://", "ws://")
    for path in ("/mcp", "/harness", "/web/ws"):
        with pytest.raises(InvalidStatus, match="403"):  # a WebSocket route that does not exist refuses the handshake
            raw_ws(base + path).close()
    # OpenEnv's server reads ?session_id= to hand a connection someone else's session: not here.
    with raw_ws(idle.ws_url + "?session_id=00000000-0000-0000-0000-000000000000") as ws:
        reply = json.loads(ws.recv(timeout=30))
        assert reply["type"] == "error" and "no query parameters" in reply["data"]["message"]
        with pytest.raises(ConnectionClosed):
            ws.recv(timeout=30)
    assert open_sessions(idle) == 0


def test_the_mcp_message_type_is_refused_and_the_session_cap_holds(idle: Served) -> None:
    create = {"type": "mcp", "data": {"jsonrpc": "2.0", "method": "openenv/session/create", "params": {}, "id": 1}}
    close = {"type": "mcp", "data": {"jsonrpc": "2.0", "method": "openenv/session/close", "params": {}, "id": 2}}
    with contextlib.ExitStack() as stack:
        first = stack.enter_context(raw_ws(idle.ws_url))
        for frame in (create, close):
            reply = ask(first, frame)
            assert reply["type"] == "error" and reply["data"]["code"] == "UNKNOWN_TYPE"
            assert "'mcp' is not served here" in reply["data"]["message"]
        assert open_sessions(idle) == 1  # the socket holds one slot, neither more nor less
        assert ask(first, {"type": "state"})["type"] == "state"  # the session goes on
        others = [stack.enter_context(raw_ws(idle.ws_url)) for _ in range(HOSTILE_SESSIONS - 1)]
        for other in others:
            assert ask(other, {"type": "state"})["type"] == "state"
        # POST /mcp (OpenEnv's way to free a slot from outside) does not exist; the cap holds.
        assert http("POST", idle.url + "/mcp", json.dumps(close["data"]).encode()) == 404
        for frame in (close, create, close):
            assert ask(first, frame)["data"]["code"] == "UNKNOWN_TYPE"
        with raw_ws(idle.ws_url) as refused:
            reply = json.loads(refused.recv(timeout=30))
            assert reply["type"] == "error" and reply["data"]["code"] == "CAPACITY_REACHED"
            assert reply["data"]["max_sessions"] == HOSTILE_SESSIONS
            with pytest.raises(ConnectionClosed):
                refused.recv(timeout=30)
        assert open_sessions(idle) == HOSTILE_SESSIONS
    # Slots come back when (and only when) their connections close.
    wait_for(lambda: open_sessions(idle) == 0, "the sessions to close")
    with raw_ws(idle.ws_url) as again:
        assert ask(again, {"type": "state"})["type"] == "state"


# -- 6. malformed frames ----------------------------------------------------------------------


def test_malformed_frames_get_error_frames_and_the_session_goes_on(idle: Served) -> None:
    nested: Any = 1
    for _ in range(33):  # with the frame's own 3 levels, past the 32-level bound
        nested = [nested]
    with raw_ws(idle.ws_url) as ws:
        assert ask(ws, {"type": "reset", "data": {"episode_id": "frames"}})["type"] == "observation"
        refused: dict[str | bytes, str] = {
            "[]": "INVALID_JSON",
            "1": "INVALID_JSON",
            "null": "INVALID_JSON",
            "{nope": "INVALID_JSON",
            b'{"type": "state"}': "INVALID_JSON",
            "[" * 200_000 + "]" * 200_000: "VALIDATION_ERROR",
            json.dumps({"type": "step", "data": {"tool": "shell", "arguments": {"a": nested}}}): "VALIDATION_ERROR",
            json.dumps({"type": "state", "extra": 1}): "VALIDATION_ERROR",
            json.dumps({"type": "mcp", "data": {}}): "UNKNOWN_TYPE",
        }  # fmt: skip
        for frame, code in refused.items():
            reply = ask(ws, frame)
            assert reply["type"] == "error" and reply["data"]["code"] == code, (str(frame)[:60], reply)
        # None of them was a step: the episode's next step is its first.
        reply = ask(ws, {"type": "step", "data": {"tool": "list_files"}})
        assert reply["type"] == "observation" and reply["data"]["observation"]["info"]["step"] == 1
        assert "report.py" in reply["data"]["observation"]["text"]
    events = read_events(idle.runs / "frames" / "ledger.jsonl")
    assert [e["tool"] for e in events if e["event"] == "step"] == ["list_files"]


# -- 3. one size rule, large frames ------------------------------------------------------------


def test_an_action_gets_the_same_answer_in_process_and_over_the_server(idle: Served, echo_env: TrainFailEnv) -> None:
    cjk = {"tool": "write_file", "arguments": {"path": "cjk.txt", "content": "中" * 450_000}}
    over = {"tool": "write_file", "arguments": {"path": "over.txt", "content": "中" * MAX_ACTION_CHARS}}
    echo_env.reset()
    local = [echo_env.step(action)[0] for action in (cjk, over)]
    with GenericEnvClient(base_url=idle.url, headers=AUTH, message_timeout_s=300).sync() as env:
        env.reset(episode_id="size-rule")
        # OpenEnv's client escapes non-ASCII: 2.7 MB and 15 MB frames for these two actions.
        remote = [env.step(action).observation["text"] for action in (cjk, over)]
    assert local[0] == remote[0] and not local[0].startswith("error")
    assert local[1] == remote[1] and local[1].startswith("error: the action is 2,500,0")
    # The server closes the episode after the client left: its workspace moves off its disk area then.
    wait_for(lambda: finishes(idle.runs / "size-rule" / "ledger.jsonl") == 1, "the served episode to close")
    # the finish event is written before the workspace leaves its disk area (copied out, unmounted, renamed into
    # place): wait until it is a plain folder again, not only for the event (a run under load read it in between)
    served = Path(os.path.realpath(idle.runs / "size-rule")) / "workspace"
    wait_for(lambda: not is_mounted(served) and (served / "cjk.txt").is_file(), "the served workspace to be copied out")
    for workspace in (Path(str(echo_env.run_dir)) / "workspace", idle.runs / "size-rule" / "workspace"):
        assert (workspace / "cjk.txt").read_text(encoding="utf-8") == "中" * 450_000
        assert not (workspace / "over.txt").exists()


def test_the_typed_client_sends_utf8_so_any_action_within_the_limit_fits_a_frame(idle: Served) -> None:
    # 1.8 M emoji: within the action limit, 7.2 MB as UTF-8, 21.6 MB (over the 20 MB frame bound) as \u
    # escapes. The env refuses the write itself (2 MiB per write): what matters is who answers.
    action = {"tool": "write_file", "arguments": {"path": "emoji.txt", "content": "😀" * 1_800_000}}
    with idle.client() as env:
        env.reset(episode_id="utf8-frames")
        result = env.step(TrainFailAction(**action))
        assert result.observation.text.startswith("error: content is 7200000 bytes; at most 2097152 bytes per write")
        assert "report.py" in act(env, "list_files").observation.text  # the session goes on
    steps = [e for e in read_events(idle.runs / "utf8-frames" / "ledger.jsonl") if e["event"] == "step"]
    assert [(s["tool"], s["status"]) for s in steps] == [("write_file", "error"), ("list_files", "ok")]
    # OpenEnv's client escapes every emoji (12 bytes): the frame is over the bound and ends the session.
    with GenericEnvClient(base_url=idle.url, headers=AUTH, message_timeout_s=300).sync() as escaping:
        escaping.reset(episode_id="escaped-frames")
        with pytest.raises(ConnectionClosed):
            escaping.step(action)


@contextlib.contextmanager
def in_process_server(echo_case: CaseSpec, runs: Path, gate: Gate, max_sessions: int = 2) -> Iterator[str]:
    """``build_app`` served by uvicorn in a thread of this process (so a test can patch it)."""
    app = build_app(serve_config(echo_case, runs), TOKEN, max_sessions)
    sock = app_module.bind("127.0.0.1", 0)
    ready = threading.Event()
    server = make_server(app, gate, ready.set)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        assert ready.wait(60), "the in-process server did not start"
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        server.should_exit = True
        thread.join(120)


def test_a_large_frame_is_parsed_off_the_event_loop(
    runtime: Runtime, bwrap_usable: None, echo_case: CaseSpec, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """While one session's 9 MB frame is being parsed (held in the parser until the other session
    has stepped), another session connects, resets and steps."""
    parsing, release = threading.Event(), threading.Event()
    parse = protocol.parse_frame

    def held_parse(frame: str | bytes) -> Any:
        if len(frame) > 1_000_000:
            parsing.set()
            release.wait(120)
        return parse(frame)

    monkeypatch.setattr(protocol, "parse_frame", held_parse)
    big = {
        "type": "step",
        "data": {"tool": "write_file", "arguments": {"path": "big.txt", "content": "中" * 3_000_000}},
    }
    answers: list[dict[str, Any]] = []
    with in_process_server(echo_case, tmp_path / "runs", Gate(64)) as url:
        ws_url = url.replace("http://", "ws://") + "/ws"
        with raw_ws(ws_url) as large:
            assert ask(large, {"type": "reset", "data": {"episode_id": "large"}})["type"] == "observation"
            sender = threading.Thread(target=lambda: answers.append(ask(large, json.dumps(big, ensure_ascii=False))))
            sender.start()
            assert parsing.wait(120), "the large frame never reached the parser"
            try:
                with TrainFailClient(
                    base_url=url, token=TOKEN, message_timeout_s=60, connect_timeout_s=30
                ).sync() as env:
                    env.reset(episode_id="small")
                    result = act(env, "list_files")
                    assert "report.py" in result.observation.text
                    assert answers == []  # the large frame is still in the parser
            finally:
                release.set()
            sender.join(120)
    assert len(answers) == 1 and answers[0]["type"] == "observation"
    assert answers[0]["data"]["observation"]["text"].startswith("error: the action is 3,000,0")


def test_a_20mb_frame_ends_only_its_own_session_and_its_episode_resumes(idle: Served) -> None:
    with raw_ws(idle.ws_url) as ws, idle.client() as other:
        other.reset(episode_id="bystander")
        assert ask(ws, {"type": "reset", "data": {"episode_id": "oversized"}})["type"] == "observation"
        huge = json.dumps({"type": "step", "data": {"tool": "shell", "arguments": {"command": "x" * (21 * 2**20)}}})
        with pytest.raises(ConnectionClosed) as closed:  # while sending, or at the next read
            ws.send(huge)
            ws.recv(timeout=120)
        # Close code 1009, unless the client is still sending when the server drops the connection.
        assert closed.value.rcvd is None or closed.value.rcvd.code == 1009
        assert "report.py" in act(other, "list_files").observation.text
    ledger = idle.runs / "oversized" / "ledger.jsonl"
    wait_for(lambda: finishes(ledger) == 1, "the oversized session's episode to close")
    assert [e.get("reason") for e in read_events(ledger) if e["event"] == "finish"] == ["close"]
    with idle.client() as env:
        assert env.reset(resume="oversized").observation.info["resumed"] is True


# -- 4. shutdown: the second signal ------------------------------------------------------------


def processes_running(marker: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                if marker.encode() in (entry / "cmdline").read_bytes().replace(b"\0", b" "):
                    found.append(int(entry.name))
    return found


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_second_signal_stops_a_running_step_and_exits(
    runtime: Runtime, bwrap_usable: None, echo_case: CaseSpec, tmp_path: Path, sig: signal.Signals
) -> None:
    served = start(tmp_path, max_sessions=2)
    marker = f"sleep {87 + int(sig)}"  # a command line no other test runs
    outcome: list[Any] = []
    env = served.client()
    try:
        env.connect()
        env.reset(episode_id="halted")
        act(env, "write_file", path="kept.txt", content="before the signal")

        def long_step() -> None:
            try:
                outcome.append(act(env, "shell", command=f"touch started; exec {marker}"))
            except BaseException as exc:  # noqa: BLE001 - the server goes away mid-step
                outcome.append(exc)

        stepping = threading.Thread(target=long_step, daemon=True)
        stepping.start()
        workspace = served.runs / "halted" / "workspace"
        wait_for(lambda: (workspace / "started").exists() and bool(processes_running(marker)), "the step to start", 120)
        served.process.send_signal(sig)
        wait_for(lambda: "stopping;" in served.stderr.read_text(), "the first signal to be taken", 30)
        served.process.send_signal(sig)
        # The step would run for 90 s: the server exits long before, without waiting for it.
        status = served.process.wait(60)
        stepping.join(60)
    finally:
        if served.process.poll() is None:
            served.process.kill()
        with contextlib.suppress(Exception):
            env.close()
    assert status == 128 + sig
    wait_for(lambda: not processes_running(marker), "the step's sandbox processes to die", 30)
    assert outcome and isinstance(outcome[0], BaseException)  # no answer came for the stopped step
    stderr = served.stderr.read_text()
    assert "episode halted interrupted in its running call" in stderr and f"stopped on a second {sig.name}" in stderr
    run_dir = served.runs / "halted"
    events = read_events(run_dir / "ledger.jsonl")
    assert [(e["index"], e["tool"]) for e in events if e["event"] == "step"] == [(1, "write_file")]
    last = events[-1]
    assert last["event"] == "finish" and last["reason"] == "interrupted"
    assert last["interrupted"] == {"call": "step 2 (shell)", "cause": f"second {sig.name}"}
    assert len(read_transcript(run_dir)) == 1
    # The episode continues as of its last completed step: the stopped step's file is not there.
    resumed = TrainFailEnv(case=echo_case, sandbox="bwrap")
    try:
        _, info = resumed.reset(options={"resume": run_dir})
        assert info["resumed"] is True and info["step"] == 1
        listing, *_ = resumed.step({"tool": "list_files", "arguments": {}})
        assert "kept.txt" in listing and "started" not in listing
    finally:
        resumed.close()


# -- 5. limits before the token ----------------------------------------------------------------


def test_header_timeout_and_eviction_of_half_open_connections(
    runtime: Runtime, bwrap_usable: None, echo_case: CaseSpec, tmp_path: Path
) -> None:
    gate = Gate(limit=4, header_timeout_s=0.5)
    with in_process_server(echo_case, tmp_path / "runs", gate) as url:
        port = int(url.rsplit(":", 1)[1])

        def half_open() -> socket.socket:
            sock = socket.create_connection(("127.0.0.1", port), timeout=30)
            sock.sendall(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n")  # no blank line: headers never end
            return sock

        def closed_by_server(sock: socket.socket) -> bool:
            try:
                return sock.recv(1024) == b""
            except ConnectionResetError:
                return True

        lone = half_open()
        assert closed_by_server(lone)  # within the header timeout (the recv waits at most 30 s)
        flood = [half_open() for _ in range(10)]
        # An authorised request still gets through (it evicts the oldest half-open socket).
        request = urllib.request.Request(url + "/health", headers=AUTH)
        with urllib.request.urlopen(request, timeout=30) as response:
            assert response.status == 200 and response.headers["connection"] == "close"
        assert all(closed_by_server(sock) for sock in flood[:6])  # evicted, or timed out since
        for sock in [lone, *flood]:
            sock.close()
        assert gate.tally.total and sum(gate.tally.total.values()) >= 7
        assert gate.guarded <= gate.limit


@pytest.mark.slow
def test_a_flood_of_half_open_sockets_under_256_fds_starves_nobody(
    runtime: Runtime, bwrap_usable: None, tmp_path: Path
) -> None:
    def low_limit() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (256, 256))

    served = start(tmp_path, max_sessions=1, preexec=low_limit)
    port = int(served.url.rsplit(":", 1)[1])
    flood: list[socket.socket] = []
    stop_flood = threading.Event()
    failures: list[str] = []

    def open_half_requests() -> None:
        while len(flood) < 600 and not stop_flood.is_set():
            try:
                sock = socket.create_connection(("127.0.0.1", port), timeout=10)
                sock.sendall(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n")
                flood.append(sock)
            except OSError as exc:
                failures.append(type(exc).__name__)  # a reset by eviction races the send
                time.sleep(0.01)

    flooder = threading.Thread(target=open_half_requests, daemon=True)
    try:
        flooder.start()
        wait_for(lambda: len(flood) >= 300, "300 half-open sockets", 120)
        with served.client() as env:  # during the flood
            env.reset(episode_id="flooded")
            for index in range(1, 4):
                result = act(env, "shell", command=f"echo step-{index}")
                assert f"step-{index}" in result.observation.text and not result.observation.info["error"]
            assert env.state().step_count == 3
        stop_flood.set()
        flooder.join(60)
        # Most half-open sockets were evicted: the server never held more than its budget.
        evicted = 0
        for sock in flood:
            sock.setblocking(False)
            try:
                evicted += sock.recv(1024) == b""
            except ConnectionResetError:
                evicted += 1
            except BlockingIOError:
                pass
        assert evicted >= 300
        assert http("GET", served.url + "/health") == 200
    finally:
        stop_flood.set()
        for sock in flood:
            sock.close()
        stop(served)
    run_dir = served.runs / "flooded"
    assert [r["index"] for r in read_transcript(run_dir)] == [1, 2, 3]  # no step lost its transcript line
    assert [e["status"] for e in read_events(run_dir / "ledger.jsonl") if e["event"] == "step"] == ["ok"] * 3
    stderr = served.stderr.read_text()
    assert "Too many open files" not in stderr and "Traceback" not in stderr
    assert len(stderr) < 20_000, stderr[-3000:]
