"""``trainfail serve`` over real sockets, driven with OpenEnv's own clients.

One server process (the real CLI, bubblewrap, the echo case, 8 sessions) serves the module;
the SIGTERM test starts its own. Every wait is bounded and every connection goes to the
server's loopback address.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from openenv.core.generic_client import GenericEnvClient

from gym_trainfail.cases import CaseSpec
from gym_trainfail.env import TrainFailEnv
from gym_trainfail.ledger import read_events
from gym_trainfail.runtimes import Runtime
from gym_trainfail.serve import TrainFailAction, TrainFailClient
from gym_trainfail.serve.auth import BearerAuth, check_token
from gym_trainfail.serve.models import MAX_ACTION_CHARS
from tests.conftest import ECHO_CASE
from trainfail_agents.scripted import patched_files

TOKEN = "test-serve-token-5d1c8e7f3a9b2c4d"
#: Keys the in-process ``info`` dict may have (env._info and the end-of-episode additions).
INFO_KEYS = {"tool", "error", "step", "revision", "run_dir", "resumed", "reward_status", "final_revision"}
START_TIMEOUT_S = 180


@dataclass
class Server:
    url: str
    runs: Path
    process: subprocess.Popen[str]
    stderr: Path

    def client(self, token: str = TOKEN) -> Any:
        return TrainFailClient(base_url=self.url, token=token, message_timeout_s=300).sync()


def start_server(tmp: Path, *extra: str, max_sessions: int = 8) -> Server:
    """The real ``trainfail serve`` on a free loopback port, its token from the environment."""
    runs, stderr = tmp / "runs", tmp / "serve.err"
    env = {**os.environ, "TRAINFAIL_SERVE_TOKEN": TOKEN}
    command = [sys.executable, "-m", "gym_trainfail.cli", "serve", "--cases", str(ECHO_CASE), "--sandbox", "bwrap",
               "--port", "0", "--runs", str(runs), "--max-sessions", str(max_sessions), *extra]  # fmt: skip
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=stderr.open("w"), env=env, text=True)
    ready = read_line(process, START_TIMEOUT_S)
    if not ready:
        process.kill()
        pytest.fail(f"trainfail serve did not start within {START_TIMEOUT_S} s: {stderr.read_text()[-2000:]}")
    line = json.loads(ready)
    return Server(url=line["url"], runs=runs, process=process, stderr=stderr)


def read_line(process: subprocess.Popen[str], timeout_s: float) -> str:
    """The next line ``process`` prints, waiting at most ``timeout_s`` ("" if none came)."""
    line: list[str] = []
    reader = threading.Thread(target=lambda: line.append(process.stdout.readline() if process.stdout else ""))
    reader.daemon = True
    reader.start()
    reader.join(timeout_s)
    return line[0].strip() if line else ""


def stop_server(server: Server) -> int:
    if server.process.poll() is not None:
        return server.process.returncode
    server.process.send_signal(signal.SIGTERM)
    try:
        return server.process.wait(120)
    finally:
        if server.process.poll() is None:
            server.process.kill()


@pytest.fixture(scope="module")
def server(runtime: Runtime, bwrap_usable: None, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    served = start_server(tmp_path_factory.mktemp("serve"))
    yield served
    stop_server(served)


def act(env: Any, tool: str, **arguments: Any) -> Any:
    return env.step(TrainFailAction(tool=tool, arguments=arguments))


def reference_files(case: CaseSpec) -> dict[str, str]:
    return {p: t for p, t in patched_files(case.workspace_dir, case.reference_patch).items() if t is not None}


def http_get(url: str, token: str | None) -> tuple[int, str]:
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"} if token else {})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def test_reference_repair_gets_reward_1_and_noop_0_as_in_process(server: Server, echo_case: CaseSpec) -> None:
    plays = {"reference": reference_files(echo_case), "noop": {}}
    rewards: dict[str, float] = {}
    errors: list[BaseException] = []

    def play(name: str, files: dict[str, str]) -> None:
        try:
            with server.client() as env:
                result = env.reset(episode_id=f"grade-{name}")
                assert result.reward is None and not result.done
                assert set(result.observation.info) <= INFO_KEYS
                for path, text in files.items():
                    assert not act(env, "write_file", path=path, content=text).observation.info["error"]
                submitted = act(env, "submit")
                assert submitted.observation.text == "revision 1 recorded" and submitted.reward == 0.0
                finished = act(env, "finish")
                assert finished.done and finished.observation.terminated and not finished.observation.truncated
                assert finished.observation.info["reward_status"] == "graded"
                assert set(finished.observation.info) <= INFO_KEYS  # no scenario, verdict or receipt in it
                fields = set(finished.observation.model_dump())
                assert fields == {"text", "terminated", "truncated", "info", "metadata", "reward", "done"}
                rewards[name] = finished.reward
                state = env.state()
                assert state.done and state.episode_id == f"grade-{name}" and state.step_count == len(files) + 2
        except BaseException as exc:  # noqa: BLE001 - reported by the main thread
            errors.append(exc)

    # Both episodes at once: two sessions grading side by side on the shared device pool.
    threads = [threading.Thread(target=play, args=item) for item in plays.items()]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(300)
    assert errors == []
    assert rewards == {"reference": 1.0, "noop": 0.0}
    for name, reward in rewards.items():
        # The reward is the grade the env recorded for the operator (result.json), never an observation.
        assert json.loads((server.runs / f"grade-{name}" / "result.json").read_text())["reward"] == reward


def test_eight_concurrent_sessions_are_isolated_and_a_ninth_is_refused(server: Server) -> None:
    barrier = threading.Barrier(9, timeout=240)
    seen: dict[int, str] = {}
    errors: list[BaseException] = []

    def session(index: int) -> None:
        try:
            with server.client() as env:
                env.reset(episode_id=f"concurrent-{index}")
                act(env, "write_file", path="mine.txt", content=f"session {index}")
                barrier.wait()  # all eight hold an episode while the ninth knocks
                seen[index] = act(env, "read_file", path="mine.txt").observation.text
                barrier.wait()
                assert act(env, "finish").done
        except BaseException as exc:  # noqa: BLE001 - reported by the main thread
            errors.append(exc)
            barrier.abort()

    threads = [threading.Thread(target=session, args=(i,)) for i in range(8)]
    for thread in threads:
        thread.start()
    barrier.wait()
    with pytest.raises(RuntimeError, match="CAPACITY_REACHED"), server.client() as ninth:
        ninth.reset()
    barrier.wait()
    for thread in threads:
        thread.join(240)
    assert errors == []
    assert {i: text.strip() for i, text in seen.items()} == {i: f"session {i}" for i in range(8)}
    run_dirs = {server.runs / f"concurrent-{i}" for i in range(8)}
    assert all((d / "ledger.jsonl").is_file() for d in run_dirs)


def test_a_missing_or_wrong_token_is_refused(server: Server) -> None:
    for token in ("", "test-serve-token-5d1c8e7f3a9b2c4e", TOKEN + "x", TOKEN.upper()):
        with pytest.raises(ConnectionError, match="403"):
            GenericEnvClient(base_url=server.url, headers={"Authorization": f"Bearer {token}"}).sync().connect()
    with pytest.raises(ConnectionError, match="403"):
        GenericEnvClient(base_url=server.url).sync().connect()
    assert http_get(f"{server.url}/schema", None)[0] == 401
    assert http_get(f"{server.url}/schema", "wrong-token-0123456789")[0] == 401
    assert http_get(f"{server.url}/docs", None)[0] == 401
    status, body = http_get(f"{server.url}/schema", TOKEN)
    assert status == 200
    assert {"tool", "arguments"} <= set(json.loads(body)["action"]["properties"])
    status, body = http_get(f"{server.url}/cases", TOKEN)
    assert status == 200 and json.loads(body)["cases"] == ["TrainFailTest/Echo-v0"]
    # The stateless HTTP reset/step are not served: an episode is a sandbox with a run directory.
    assert http_get(f"{server.url}/state", TOKEN)[0] == 404


def test_auth_header_rules() -> None:
    async def app(scope: Any, receive: Any, send: Any) -> None:
        raise AssertionError("never reached")

    guard = BearerAuth(app, TOKEN)
    header = f"Bearer {TOKEN}".encode()
    assert guard.authorized({"headers": [(b"authorization", header)]})
    assert guard.authorized({"headers": [(b"Authorization", header)]})
    assert not guard.authorized({"headers": [(b"authorization", header), (b"authorization", header)]})
    assert not guard.authorized({"headers": [(b"authorization", f"bearer {TOKEN}".encode())]})
    assert not guard.authorized({"headers": [(b"authorization", header + b" ")]})
    assert not guard.authorized({"headers": [(b"authorization", b"Bearer " + b"x" * 5000)]})
    assert not guard.authorized({"headers": []})
    for bad in ("short", "has a space in it 0123", "ünïcode-token-0123456789"):
        with pytest.raises(ValueError):
            check_token(bad)


def test_malformed_and_oversized_actions_are_error_observations(server: Server) -> None:
    with GenericEnvClient(base_url=server.url, headers={"Authorization": f"Bearer {TOKEN}"}).sync() as env:
        env.reset(episode_id="malformed")
        bad_actions: list[dict[str, Any]] = [
            {"tool": 5},
            {"tool": "shell", "arguments": "not an object"},
            {"tool": "no_such_tool"},
            {"tool": "read_file", "arguments": {"path": 3}},
            {"tool": "shell", "arguments": {"command": "x" * (MAX_ACTION_CHARS + 10)}},
            {"tool": "list_files", "unexpected": True},
            {"tool": "list_files", "invalid": "forged by the client"},
        ]
        for index, action in enumerate(bad_actions, start=1):
            result = env.step(action)
            observation = result.observation
            assert observation["text"].startswith("error:"), observation["text"][:200]
            assert observation["info"]["error"] is True and observation["info"]["step"] == index
            assert not result.done and result.reward == 0.0
        assert "limit" in env.step(bad_actions[4]).observation["text"]
        # The same session goes on.
        assert "report.py" in env.step({"tool": "list_files"}).observation["text"]
        assert env.step({"tool": "finish"}).done
    steps = [e for e in read_events(server.runs / "malformed" / "ledger.jsonl") if e["event"] == "step"]
    assert [e["status"] for e in steps] == ["error"] * (len(bad_actions) + 1) + ["ok", "ok"]


def test_step_before_reset_is_an_error_observation(server: Server) -> None:
    with server.client() as env:
        result = act(env, "list_files")
        assert result.observation.text.startswith("error: no episode is open")
        with pytest.raises(RuntimeError, match="not served here"):
            env.reset(case="TrainFail/NoSuchCase-v0")
        with pytest.raises(RuntimeError, match="episode id"):
            env.reset(resume="../../etc")
        with pytest.raises(RuntimeError, match="unknown reset option"):
            env.reset(run_dir="/tmp/elsewhere")


KILLED_CLIENT = textwrap.dedent(
    """
    import sys, time
    from gym_trainfail.serve import TrainFailAction, TrainFailClient
    env = TrainFailClient(base_url=sys.argv[1], token=sys.argv[2]).sync()
    env.connect()
    env.reset(episode_id="killed")
    env.step(TrainFailAction(tool="write_file", arguments={"path": "notes.txt", "content": "kept"}))
    print("written", flush=True)
    time.sleep(600)
    """
)


def test_a_killed_clients_episode_resumes(server: Server) -> None:
    client = subprocess.Popen(
        [sys.executable, "-c", KILLED_CLIENT, server.url, TOKEN], stdout=subprocess.PIPE, text=True
    )
    try:
        assert read_line(client, 120) == "written"
    finally:
        client.kill()
        client.wait(30)
    ledger = server.runs / "killed" / "ledger.jsonl"
    deadline = time.monotonic() + 60
    while not any(e["event"] == "finish" for e in read_events(ledger)):
        assert time.monotonic() < deadline, "the server did not close the disconnected session's episode"
        time.sleep(0.2)
    assert [e.get("reason") for e in read_events(ledger) if e["event"] == "finish"] == ["close"]
    with server.client() as env, server.client() as other:
        resumed = env.reset(resume="killed")
        assert resumed.observation.info["resumed"] is True
        with pytest.raises(RuntimeError, match="open in another session"):
            other.reset(resume="killed")
        assert act(env, "read_file", path="notes.txt").observation.text.strip() == "kept"
        assert act(env, "finish").observation.info["step"] == 3
    events = read_events(ledger)
    assert [e["event"] for e in events if e["event"] in ("resume", "suspension")] == ["suspension", "resume"]


def test_the_server_listens_on_loopback_only_and_keeps_the_token_out_of_episodes(server: Server) -> None:
    port = int(server.url.rsplit(":", 1)[1])
    listening = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for row in Path(table).read_text().splitlines()[1:]:
            local, state = row.split()[1], row.split()[3]
            if state == "0A" and int(local.rsplit(":", 1)[1], 16) == port:
                listening.append(local.rsplit(":", 1)[0])
    assert listening == ["0100007F"]  # 127.0.0.1, nothing else
    assert server.url.startswith("http://127.0.0.1:")
    # Every file the episodes wrote (the workspaces' sparse disk images excepted: they hold what the
    # sandbox wrote, and the sandbox never had the token).
    written = _files_at_rest(server.runs)
    assert written and [p for p, data in written.items() if TOKEN.encode() in data] == []


def _files_at_rest(root: Path, timeout: float = 60.0) -> dict[Path, bytes]:
    """Every file under ``root`` (under 64 MiB) and its bytes, read while no episode is moving files: a
    session closed just before (the previous test's) copies its workspace out of its disk area into a
    staging folder and renames it, so a file listed may be gone when read; the scan then starts again."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return {p: p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file() and p.stat().st_size < 64 * 2**20}
        except FileNotFoundError:
            assert time.monotonic() < deadline, f"files under {root} kept moving for {timeout:.0f} s"
            time.sleep(0.5)


def test_sigterm_closes_open_episodes_resumable_after_their_step(server: Server, echo_case: CaseSpec) -> None:
    """Runs last: it stops the module's server."""
    answered: list[Any] = []
    env = server.client()
    env.connect()
    env.reset(episode_id="sigterm")
    act(env, "write_file", path="before.txt", content="written before")

    def slow_step() -> None:
        try:
            answered.append(act(env, "shell", command="touch started; sleep 4; echo late > after.txt; echo done"))
        except BaseException as exc:  # noqa: BLE001 - the server may close the socket first
            answered.append(exc)

    stepping = threading.Thread(target=slow_step)
    stepping.start()
    started = server.runs / "sigterm" / "workspace" / "started"
    deadline = time.monotonic() + 120
    while not started.exists():  # wait until the shell step runs in the sandbox
        assert time.monotonic() < deadline, "the shell step did not start"
        time.sleep(0.05)
    status = stop_server(server)
    stepping.join(60)
    assert status in (0, -signal.SIGTERM)
    ledger = server.runs / "sigterm" / "ledger.jsonl"
    events = read_events(ledger)
    steps = [e for e in events if e["event"] == "step"]
    assert [s["tool"] for s in steps] == ["write_file", "shell"]  # the in-flight step's line is there
    assert events[-1]["event"] == "finish" and events[-1]["reason"] == "close"
    assert "episode sigterm left unfinished; continue it with reset(resume='sigterm')" in server.stderr.read_text()
    env_in_process = TrainFailEnv(case=echo_case, sandbox="bwrap")
    try:
        _, info = env_in_process.reset(options={"resume": server.runs / "sigterm"})
        assert info["resumed"] is True
        for path, text in {"before.txt": "written before", "after.txt": "late"}.items():
            observation, *_ = env_in_process.step({"tool": "read_file", "arguments": {"path": path}})
            assert observation.strip() == text
    finally:
        env_in_process.close()
