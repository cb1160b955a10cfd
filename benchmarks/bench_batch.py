"""Batch throughput against worker count, and episode overhead.

    .venv/bin/python benchmarks/bench_batch.py [--workers 1 2 4] [--trials 4] [--real RUN_DIR]

Throughput: a batch of echo-case episodes (reference and noop agents) on the local worker pool
with 1, 2, 4 workers. Episode overhead: everything but the agent's own commands and the training
they launch (attempt wall time − ``shell``/``run_job`` step time), from the adjudications of the
echo batches and, with ``--real``, of a real batch (e.g. the committed leaderboard's run).
Prints a table and writes benchmarks/results/batch.json. Figures, not assertions.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from gym_trainfail.batch import (
    LocalRunner,
    RunLayout,
    adjudicate_batch,
    grade_batch,
    load_plan,
    make_plan,
    resolve_cases,
    run_episodes,
    write_plan,
)
from gym_trainfail.devices import DevicePool
from gym_trainfail.paths import runtimes_dir

RESULTS = Path(__file__).parent / "results"
ECHO_CASE = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "cases" / "echo_case"


def overhead_figures(adjudications: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Median and mean of each overhead component over episodes."""
    figures: dict[str, Any] = {"episodes": len(adjudications)}
    for key in ("attempt_seconds", "startup_seconds", "agent_command_seconds", "overhead_seconds"):
        values = [a["overhead"][key] for a in adjudications if a["overhead"].get(key) is not None]
        if values:
            figures[key] = {"median": statistics.median(values), "mean": statistics.fmean(values),
                            "min": min(values), "max": max(values)}  # fmt: skip
    return figures


def throughput(workers: int, trials: int, root: Path) -> dict[str, Any]:
    """Play an echo batch with ``workers`` workers; episodes per minute and overhead."""
    layout = RunLayout(root / f"workers-{workers}")
    cases = resolve_cases([str(ECHO_CASE)])
    plan = write_plan(layout, make_plan(cases, ["control"], ["reference", "noop"], trials, sandbox="bwrap"))
    started = time.perf_counter()
    counts = run_episodes(layout, plan, LocalRunner(layout, workers))
    wall = time.perf_counter() - started
    grade_batch(layout, plan)
    adjudications = adjudicate_batch(layout, plan)
    return {
        "workers": workers,
        "episodes": counts.done,
        "wall_seconds": wall,
        "episodes_per_minute": 60 * counts.done / wall,
        "overhead": overhead_figures(adjudications),
    }


def real_batch(run_dir: Path) -> dict[str, Any]:
    """Overhead and grading figures of a finished real batch."""
    layout = RunLayout(run_dir)
    plan = load_plan(layout)
    adjudications = [json.loads(layout.adjudication(e.id).read_text()) for e in plan.episodes
                     if layout.adjudication(e.id).exists()]  # fmt: skip
    by_case: dict[str, Any] = {}
    for case in plan.spec.cases:
        by_case[case] = overhead_figures([a for a in adjudications if a["case"] == case])
    statuses = [json.loads(layout.status(e.id).read_text()) for e in plan.episodes]
    attempts = [a for s in statuses for a in s["attempts"] if a.get("ended")]
    first = min(a["started"] for a in attempts)
    last = max(a["ended"] for a in attempts)
    return {
        "run_dir": str(run_dir),
        "episodes": len(adjudications),
        "episode_stage_wall_seconds": last - first,
        "episodes_per_minute": 60 * len(adjudications) / (last - first),
        "overhead": overhead_figures(adjudications),
        "overhead_by_case": by_case,
    }


def private_home(folder: Path) -> None:
    """A state directory of our own (so other work on the node holds none of our device slots)
    that reuses the node's built runtimes."""
    folder.mkdir(parents=True)
    (folder / "runtimes").symlink_to(runtimes_dir(), target_is_directory=True)
    os.environ["TRAINFAIL_HOME"] = str(folder)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument("--trials", type=int, default=4)
    parser.add_argument("--real", type=Path, help="also report a finished real batch's run directory")
    parser.add_argument("--shared-pool", action="store_true", help="share the node's device pool (default: private)")
    args = parser.parse_args()
    console = Console()
    results: dict[str, Any] = {"cores": os.cpu_count(), "trials": args.trials, "private_pool": not args.shared_pool}
    with tempfile.TemporaryDirectory(prefix="trainfail-bench-batch-") as scratch:
        if not args.shared_pool:
            private_home(Path(scratch) / "home")
        results["devices"] = DevicePool().describe()
        results["echo"] = [throughput(w, args.trials, Path(scratch)) for w in args.workers]
    if args.real:
        results["real"] = real_batch(args.real)
    table = Table(title=f"batch throughput (echo case, {2 * args.trials} episodes, {os.cpu_count()} cores)")
    for column in ("workers", "wall s", "episodes/min", "median overhead s", "median agent commands s"):
        table.add_column(column)
    for row in results["echo"]:
        overhead = row["overhead"]
        table.add_row(str(row["workers"]), f"{row['wall_seconds']:.1f}", f"{row['episodes_per_minute']:.1f}",
                      f"{overhead['overhead_seconds']['median']:.2f}",
                      f"{overhead['agent_command_seconds']['median']:.2f}")  # fmt: skip
    console.print(table)
    if args.real:
        real = results["real"]
        console.print(f"real batch: {real['episodes']} episodes in {real['episode_stage_wall_seconds']:.0f} s "
                      f"({real['episodes_per_minute']:.1f}/min)")  # fmt: skip
        for case, figures in real["overhead_by_case"].items():
            o, c = figures["overhead_seconds"], figures["agent_command_seconds"]
            console.print(f"  {case}: overhead median {o['median']:.1f} s, agent commands median {c['median']:.1f} s")
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "batch.json").write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
