"""Per-step latency added by ``trainfail serve``: a WebSocket step vs. ``env.step`` in-process.

    .venv/bin/python benchmarks/bench_serve.py [--repeats 50] [--case tests/fixtures/cases/echo_case]

One run: the real ``trainfail serve`` in its own process (bubblewrap, the echo case) and an
in-process ``TrainFailEnv`` of the same case here. The same trivial step (``shell`` running
``true``) alternates between the two, so load on the machine hits both alike. Also timed: a
``state`` round trip over the same WebSocket (the protocol alone, no env call).

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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=50)
    parser.add_argument("--case", default=str(ECHO), help="case id or folder (default: the echo test case)")
    args = parser.parse_args()
    result = measure(args.case, args.repeats)
    result["cpus"] = os.cpu_count()
    result["load_1min"] = os.getloadavg()[0]
    for name in ("in_process", "websocket", "state_round_trip"):
        f = result[name]
        print(f"{name:>17}: median {f['median_ms']:7.1f} ms   p90 {f['p90_ms']:7.1f} ms   min {f['min_ms']:7.1f} ms")
    print(f"added by the server: {result['added_ms']:.1f} ms per step (median); ratio {result['ratio']:.2f}x")
    load, cpus = result["load_1min"], result["cpus"]
    print(f"({result['repeats']} steps each, interleaved; load average {load:.1f} on {cpus} CPUs)")
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "serve.json").write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
