"""Episode overhead: reset time and the cost of a trivial ``shell`` step vs. running it directly.

    .venv/bin/python benchmarks/bench_episode.py [--repeats 30] [--case TrainFail/DDPTokenAverage-v1]

The trivial step is measured three ways: ``bash -c true`` on the host; the same command through
the episode's own sandbox (``sandbox.exec``, the sandbox-level step); and through ``env.step``
(the env-level step: parsing, ledger, audit watch, checkpoint, transcript). The last two are
interleaved in one episode, so the env/sandbox ratio is the env's own per-step cost.

Prints a table and writes benchmarks/results/episode.json. Figures, not assertions.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from gym_trainfail import get_case
from gym_trainfail.env import TrainFailEnv
from gym_trainfail.sandbox import backend_status

RESULTS = Path(__file__).parent / "results"


def _median_ms(samples: list[float]) -> float:
    return statistics.median(samples) * 1000


def direct_step(repeats: int) -> list[float]:
    """The same command as the trivial step, run straight on the host."""
    samples = []
    for _ in range(repeats):
        started = time.perf_counter()
        subprocess.run(["bash", "-c", "true"], check=True)
        samples.append(time.perf_counter() - started)
    return samples


def env_figures(case_id: str, backend: str, repeats: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory(prefix="trainfail-bench-") as scratch:
        env = TrainFailEnv(case=get_case(case_id), sandbox=backend, runs_root=Path(scratch), grade_on_end=False)
        resets = []
        for _ in range(max(3, repeats // 5)):
            started = time.perf_counter()
            env.reset(seed=0)
            resets.append(time.perf_counter() - started)
        steps, sandbox_steps = [], []
        for _ in range(repeats):
            started = time.perf_counter()
            env.step({"tool": "shell", "arguments": {"command": "true"}})
            steps.append(time.perf_counter() - started)
            assert env._episode is not None
            sandbox = env._episode.sandbox
            started = time.perf_counter()
            sandbox.exec(["bash", "-c", "true"], timeout_s=60)
            sandbox_steps.append(time.perf_counter() - started)
        reads = []
        for _ in range(repeats):
            started = time.perf_counter()
            env.step({"tool": "read_file", "arguments": {"path": "README.md"}})
            reads.append(time.perf_counter() - started)
        env.close()
    return {
        "reset_ms": _median_ms(resets),
        "shell_step_ms": _median_ms(steps),
        "sandbox_step_ms": _median_ms(sandbox_steps),
        "env_over_sandbox": _median_ms(steps) / _median_ms(sandbox_steps),
        "read_file_step_ms": _median_ms(reads),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=30)
    parser.add_argument("--case", default="TrainFail/DDPTokenAverage-v1")
    args = parser.parse_args()
    direct_ms = _median_ms(direct_step(args.repeats))
    backends = [name for name, reason in backend_status().items() if reason is None and name in ("bwrap", "process")]
    results: dict[str, object] = {"case": args.case, "repeats": args.repeats, "direct_bash_true_ms": direct_ms}
    table = Table(title=f"episode overhead ({args.case}, median of {args.repeats})")
    columns = (
        "backend",
        "reset ms",
        "sandbox step ms",
        "env shell step ms",
        "env / sandbox",
        "overhead vs direct ms",
        "ratio vs direct",
        "read_file step ms",
    )
    for column in columns:
        table.add_column(column)
    table.add_row("direct (host)", "—", f"{direct_ms:.1f}", f"{direct_ms:.1f}", "—", "0", "1.0×", "—")
    for backend in backends:
        figures = env_figures(args.case, backend, args.repeats)
        figures["overhead_ms"] = figures["shell_step_ms"] - direct_ms
        figures["ratio_vs_direct"] = figures["shell_step_ms"] / direct_ms
        results[backend] = figures
        table.add_row(
            backend,
            f"{figures['reset_ms']:.1f}",
            f"{figures['sandbox_step_ms']:.1f}",
            f"{figures['shell_step_ms']:.1f}",
            f"{figures['env_over_sandbox']:.2f}×",
            f"{figures['overhead_ms']:.1f}",
            f"{figures['ratio_vs_direct']:.1f}×",
            f"{figures['read_file_step_ms']:.1f}",
        )
    Console().print(table)
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "episode.json").write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
