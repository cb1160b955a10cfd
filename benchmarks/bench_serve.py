"""Per-step latency added by ``trainfail serve``: a WebSocket step vs. ``env.step`` in-process.

    .venv/bin/python benchmarks/bench_serve.py [--repeats 50] [--case tests/fixtures/cases/echo_case]

One run: the real ``trainfail serve`` in its own process (bubblewrap, the echo case) and an
in-process ``TrainFailEnv`` of the same case here. The same trivial step (``shell`` running
``true``) alternates between the two, so load on the machine hits both alike. Also timed: a
``state`` round trip over the same WebSocket (the protocol alone, no env call).

Then the pause one session's large frames cause another: one session sends ``--big-frames``
18.6 MB step frames (a 3.1 M-character CJK ``write_file``, escaped as OpenEnv's client sends
it, over the action limit: a recorded error step) while a second session runs ``state`` round
trips back to back; the round trips' median and worst case before and during, and the server's
peak RSS.

Last, the server's RSS before and after ``--sessions`` sequential sessions (reset, one step,
disconnect): what a long-running server keeps per session.

Prints the medians, the added latency and the ratio, and writes benchmarks/results/serve.json.
Figures, not assertions.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from websockets.sync.client import connect

from gym_trainfail.env import TrainFailEnv
from gym_trainfail.registry import resolve_case
from gym_trainfail.serve import TrainFailAction, TrainFailClient
from gym_trainfail.serve.auth import new_token

REPO = Path(__file__).resolve().parents[1]
RESULTS = Path(__file__).parent / "results"
ECHO = REPO / "tests" / "fixtures" / "cases" / "echo_case"
TRIVIAL = {"tool": "shell", "arguments": {"command": "true"}}
#: Steps timed per episode (the echo case allows 40; three warm-up steps come first).
STEPS_PER_EPISODE = 30


def start_server(case: str, runs: Path, token: str) -> tuple[subprocess.Popen[str], str]:
    command = [sys.executable, "-m", "gym_trainfail.cli", "serve", "--cases", case, "--sandbox", "bwrap",
               "--port", "0", "--runs", str(runs), "--max-sessions", "2"]  # fmt: skip
    env = {**os.environ, "TRAINFAIL_SERVE_TOKEN": token}
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env, text=True)
    line: list[str] = []
    reader = threading.Thread(target=lambda: line.append(process.stdout.readline() if process.stdout else ""))
    reader.start()
    reader.join(300)
    if not line or not line[0]:
        process.kill()
        raise SystemExit("trainfail serve did not start within 300 s")
    return process, json.loads(line[0])["url"]


def ms(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {
        "median_ms": statistics.median(ordered) * 1000,
        "p90_ms": ordered[int(0.9 * (len(ordered) - 1))] * 1000,
        "min_ms": ordered[0] * 1000,
    }


def measure(case_id: str, repeats: int) -> dict[str, Any]:
    case = resolve_case(case_id)
    token = new_token()
    with tempfile.TemporaryDirectory(prefix="trainfail-bench-serve-") as scratch:
        process, url = start_server(case_id, Path(scratch) / "served", token)
        env = TrainFailEnv(case=case, sandbox="bwrap", runs_root=Path(scratch) / "local", grade_on_end=False)
        try:
            env.reset(seed=0)
            with TrainFailClient(base_url=url, token=token).sync() as remote:
                remote.reset()
                action = TrainFailAction(**TRIVIAL)
                for _ in range(3):  # warm both paths
                    env.step(TRIVIAL)
                    remote.step(action)
                local, served, protocol = [], [], []
                for index in range(repeats):
                    if index and index % STEPS_PER_EPISODE == 0:  # the case's step budget: a fresh episode
                        env.reset(seed=0)
                        remote.reset()
                    started = time.perf_counter()
                    env.step(TRIVIAL)
                    local.append(time.perf_counter() - started)
                    started = time.perf_counter()
                    result = remote.step(action)
                    served.append(time.perf_counter() - started)
                    assert not result.observation.info["error"], result.observation.text
                    started = time.perf_counter()
                    remote.state()
                    protocol.append(time.perf_counter() - started)
        finally:
            env.close()
            process.send_signal(signal.SIGTERM)
            process.wait(120)
    figures = {"in_process": ms(local), "websocket": ms(served), "state_round_trip": ms(protocol)}
    added = figures["websocket"]["median_ms"] - figures["in_process"]["median_ms"]
    ratio = figures["websocket"]["median_ms"] / figures["in_process"]["median_ms"]
    return {"case": case.id, "repeats": repeats, "sandbox": "bwrap", **figures, "added_ms": added, "ratio": ratio}


def measure_big_frames(case_id: str, frames: int) -> dict[str, Any]:
    """Another session's ``state`` round trips while one session sends large frames."""
    token = new_token()
    headers = {"Authorization": f"Bearer {token}"}
    content = "\u4e2d" * 3_100_000
    big = json.dumps(
        {"type": "step", "data": {"tool": "write_file", "arguments": {"path": "b.txt", "content": content}}}
    )
    with tempfile.TemporaryDirectory(prefix="trainfail-bench-serve-") as scratch:
        process, url = start_server(case_id, Path(scratch) / "served", token)
        ws_url = url.replace("http://", "ws://") + "/ws"
        try:
            with (
                connect(ws_url, additional_headers=headers, proxy=None, max_size=None, compression=None) as sender,
                connect(ws_url, additional_headers=headers, proxy=None, max_size=None, compression=None) as poller,
            ):
                sender.send(json.dumps({"type": "reset", "data": {}}))
                sender.recv(timeout=300)
                before: list[float] = []
                during: list[float] = []
                phase, stop = [before], threading.Event()

                def poll() -> None:
                    while not stop.is_set():
                        started = time.perf_counter()
                        poller.send('{"type": "state"}')
                        poller.recv(timeout=300)
                        phase[0].append(time.perf_counter() - started)

                polling = threading.Thread(target=poll)
                polling.start()
                time.sleep(2.0)
                phase[0] = during
                handled = []
                for _ in range(frames):
                    started = time.perf_counter()
                    sender.send(big)
                    reply = json.loads(sender.recv(timeout=300))
                    handled.append(time.perf_counter() - started)
                    assert reply["data"]["observation"]["text"].startswith("error: the action is"), reply
                stop.set()
                polling.join(60)
            status = Path(f"/proc/{process.pid}/status").read_text()
            peak_rss = int(next(line for line in status.splitlines() if line.startswith("VmHWM")).split()[1]) // 1024
        finally:
            process.send_signal(signal.SIGTERM)
            process.wait(120)
    return {
        "frame_mb": round(len(big) / 1e6, 1),
        "frames": frames,
        "frame_handled": ms(handled),
        "other_session_state_before": {**ms(before), "max_ms": max(before) * 1000, "n": len(before)},
        "other_session_state_during": {**ms(during), "max_ms": max(during) * 1000, "n": len(during)},
        "server_peak_rss_mb": peak_rss,
    }


def rss_mb(pid: int) -> float:
    status = Path(f"/proc/{pid}/status").read_text()
    return int(next(line for line in status.splitlines() if line.startswith("VmRSS")).split()[1]) / 1024


def measure_sequential_sessions(case_id: str, sessions: int) -> dict[str, Any]:
    """The server's RSS before and after ``sessions`` sessions one after another."""
    token = new_token()
    with tempfile.TemporaryDirectory(prefix="trainfail-bench-serve-") as scratch:
        process, url = start_server(case_id, Path(scratch) / "served", token)
        try:

            def one_session() -> None:
                with TrainFailClient(base_url=url, token=token).sync() as env:
                    env.reset()
                    env.step(TrainFailAction(tool="list_files"))

            one_session()  # imports and first-use caches
            time.sleep(1.0)
            before = rss_mb(process.pid)
            for _ in range(sessions):
                one_session()
            time.sleep(2.0)  # the last session's close
            after = rss_mb(process.pid)
        finally:
            process.send_signal(signal.SIGTERM)
            process.wait(120)
    return {"sessions": sessions, "rss_before_mb": before, "rss_after_mb": after,
            "mb_per_session": (after - before) / sessions}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=50)
    parser.add_argument("--case", default=str(ECHO), help="case id or folder (default: the echo test case)")
    parser.add_argument("--big-frames", type=int, default=3, help="18.6 MB frames sent for the pause figure (0: skip)")
    parser.add_argument("--sessions", type=int, default=40, help="sequential sessions for the RSS figure (0: skip)")
    args = parser.parse_args()
    result = measure(args.case, args.repeats)
    if args.big_frames:
        result["big_frames"] = measure_big_frames(args.case, args.big_frames)
    if args.sessions:
        result["sequential_sessions"] = measure_sequential_sessions(args.case, args.sessions)
    result["cpus"] = os.cpu_count()
    result["load_1min"] = os.getloadavg()[0]
    for name in ("in_process", "websocket", "state_round_trip"):
        f = result[name]
        print(f"{name:>17}: median {f['median_ms']:7.1f} ms   p90 {f['p90_ms']:7.1f} ms   min {f['min_ms']:7.1f} ms")
    print(f"added by the server: {result['added_ms']:.1f} ms per step (median); ratio {result['ratio']:.2f}x")
    load, cpus = result["load_1min"], result["cpus"]
    print(f"({result['repeats']} steps each, interleaved; load average {load:.1f} on {cpus} CPUs)")
    if "big_frames" in result:
        big = result["big_frames"]
        was, now = big["other_session_state_before"], big["other_session_state_during"]
        print(
            f"{big['frames']} frames of {big['frame_mb']} MB (median {big['frame_handled']['median_ms']:.0f} ms each): "
            f"another session's state round trip median {was['median_ms']:.1f} -> {now['median_ms']:.1f} ms, "
            f"worst {was['max_ms']:.1f} -> {now['max_ms']:.1f} ms ({now['n']} round trips during); "
            f"server peak RSS {big['server_peak_rss_mb']} MB"
        )
    if "sequential_sessions" in result:
        seq = result["sequential_sessions"]
        print(
            f"{seq['sessions']} sequential sessions: server RSS {seq['rss_before_mb']:.0f} -> "
            f"{seq['rss_after_mb']:.0f} MB ({seq['mb_per_session']:.2f} MB per session)"
        )
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "serve.json").write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
