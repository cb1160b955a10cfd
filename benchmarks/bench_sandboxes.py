"""Docker vs. bubblewrap: episode reset, trivial-step overhead, grading-scenario start-up.

    .venv/bin/python benchmarks/bench_sandboxes.py [--repeats 20] [--case TrainFail/DDPTokenAverage-v1]

* reset: ``env.reset()`` (workspace copy, sandbox start) and ``env.close()`` (sandbox removal);
* trivial step: a ``shell`` step running ``true`` (the sandbox's whole per-command path, plus the
  env's ledger and checkpoint), against ``bash -c true`` straight on the host;
* scenario start-up: what a grader pays per scenario before its harness runs: a fresh sandbox
  with the grader mounted, one trivial command, removal.

Needs both backends usable (Docker: an engine and the control image). Prints a table with
docker/bwrap ratios and writes benchmarks/results/sandboxes.json. Figures, not assertions.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from rich.console import Console
from rich.table import Table

from gym_trainfail import get_case
from gym_trainfail.cases import CaseSpec
from gym_trainfail.env import TrainFailEnv
from gym_trainfail.grading import GRADER_LIMITS, GRADING_ARM
from gym_trainfail.runtimes import find_runtime
from gym_trainfail.sandbox import Mount, SandboxConfig, backend_status, create_sandbox

RESULTS = Path(__file__).parent / "results"
BACKENDS = ("bwrap", "docker")


def median_ms(samples: list[float]) -> float:
    """Median of ``samples`` (seconds) in milliseconds."""
    return statistics.median(samples) * 1000


def timed(action: Callable[[], object]) -> float:
    """Seconds ``action`` took."""
    started = time.perf_counter()
    action()
    return time.perf_counter() - started


def direct_ms(repeats: int) -> float:
    """The trivial command straight on the host."""
    return median_ms([timed(lambda: subprocess.run(["bash", "-c", "true"], check=True)) for _ in range(repeats)])


def episode_figures(case: CaseSpec, backend: str, repeats: int) -> dict[str, float]:
    """Reset, close and trivial-step medians of one backend."""
    resets, closes, steps = [], [], []
    with tempfile.TemporaryDirectory(prefix="trainfail-bench-") as scratch:
        env = TrainFailEnv(case=case, sandbox=backend, runs_root=Path(scratch), grade_on_end=False)
        for _ in range(max(3, repeats // 4)):
            resets.append(timed(lambda: env.reset(seed=0)))
            closes.append(timed(lambda: env._end_episode("close")))
        env.reset(seed=0)
        for _ in range(repeats):
            steps.append(timed(lambda: env.step({"tool": "shell", "arguments": {"command": "true"}})))
        env.close()
    return {"reset_ms": median_ms(resets), "close_ms": median_ms(closes), "shell_step_ms": median_ms(steps)}


def scenario_startup_ms(case: CaseSpec, backend: str, repeats: int) -> float:
    """A grader's per-scenario sandbox: create (grader mounted), one trivial command, close."""
    runtime = find_runtime(GRADING_ARM)
    samples = []
    with tempfile.TemporaryDirectory(prefix="trainfail-bench-") as scratch:
        for index in range(max(3, repeats // 4)):
            workspace, io = Path(scratch) / f"ws{index}", Path(scratch) / f"io{index}"
            workspace.mkdir()
            io.mkdir()
            mounts = (Mount(case.grader_dir, "/grader"), Mount(io, "/io", writable=True))
            config = SandboxConfig(runtime=runtime, workspace=workspace, mounts=mounts, limits=GRADER_LIMITS)

            def start_run_close(config: SandboxConfig = config) -> None:
                sandbox = create_sandbox(backend, config)
                try:
                    sandbox.exec(["true"], timeout_s=60)
                finally:
                    sandbox.close()

            samples.append(timed(start_run_close))
    return median_ms(samples)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--case", default="TrainFail/DDPTokenAverage-v1")
    args = parser.parse_args()
    status = backend_status()
    missing = {name: status.get(name) for name in BACKENDS if status.get(name) is not None}
    if missing:
        raise SystemExit(f"both backends must be usable: {missing}")
    case = get_case(args.case)
    direct = direct_ms(args.repeats)
    figures: dict[str, dict[str, float]] = {}
    for backend in BACKENDS:
        figures[backend] = episode_figures(case, backend, args.repeats)
        figures[backend]["step_overhead_ms"] = figures[backend]["shell_step_ms"] - direct
        figures[backend]["scenario_startup_ms"] = scenario_startup_ms(case, backend, args.repeats)
    ratios = {key: figures["docker"][key] / figures["bwrap"][key] for key in figures["bwrap"]}
    results = {"case": args.case, "repeats": args.repeats, "direct_bash_true_ms": direct, **figures, "ratio": ratios}
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "sandboxes.json").write_text(json.dumps(results, indent=2) + "\n")
    print_table(results, figures, ratios)


def print_table(results: dict[str, object], figures: dict[str, dict[str, float]], ratios: dict[str, float]) -> None:
    """The figures as a table: one row per measure, one column per backend, and the ratio."""
    table = Table(title=f"docker vs bwrap ({results['case']}, medians of {results['repeats']})")
    for column in ("measure (ms)", "bwrap", "docker", "docker / bwrap"):
        table.add_column(column, justify="right")
    for key in figures["bwrap"]:
        table.add_row(key.removesuffix("_ms"), f"{figures['bwrap'][key]:.1f}", f"{figures['docker'][key]:.1f}",
                      f"{ratios[key]:.1f}×")  # fmt: skip
    table.add_row("host `bash -c true`", f"{results['direct_bash_true_ms']:.1f}", "", "")
    Console().print(table)


if __name__ == "__main__":
    main()
