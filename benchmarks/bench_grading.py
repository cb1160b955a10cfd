"""Grading cost: grader device-seconds per revision, the grader/solver ratio, and what the
verdict-preserving options change.

    .venv/bin/python benchmarks/bench_grading.py [--real RUN_DIR] [--regrade CASE_ID ...] [--parallel 2]

* echo case: three revisions graded sequentially and with ``--parallel`` scenarios at once
  (no receipt cache), verdicts compared;
* every way is also graded in scenario groups (one run and one judge sandbox per device count),
  and ``early-stop``: in groups, stopping at the first failing unit (what a reward needs; the
  receipt is partial, its overall verdict and every scenario it holds must agree);
* ``--real RUN_DIR``: a finished batch's grading (per-revision grader device-seconds by case, the
  grader/solver ratio with and without deduplication, and where grading time goes according to
  the harnesses' own timings: process start-up, training, oracle, the rest);
* ``--regrade CASE``: that case's original workspace, reference repair and first wrong repair
  graded every way (slow: minutes per way).

Prints a table and writes benchmarks/results/grading.json. Figures, not assertions.
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rich.console import Console

from gym_trainfail.batch import RunLayout, load_plan
from gym_trainfail.batch.grade import load_receipt
from gym_trainfail.cases import CaseSpec, load_case
from gym_trainfail.files import apply_patch
from gym_trainfail.grading import Grader
from gym_trainfail.registry import resolve_case

RESULTS = Path(__file__).parent / "results"
ECHO_CASE = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "cases" / "echo_case"


def revisions(case: CaseSpec, root: Path, wrong: bool = True) -> list[Path]:
    """The original workspace, the reference repair and (optionally) the first wrong repair."""
    made = []
    patches: list[tuple[str, Path | None]] = [("original", None), ("reference", case.reference_patch)]
    if wrong and case.wrong_repairs:
        patches.append(next(iter(case.wrong_repairs.items())))
    for name, patch in patches:
        folder = root / name
        shutil.copytree(case.workspace_dir, folder)
        if patch is not None:
            apply_patch(folder, patch)
        made.append(folder)
    return made


def both_ways(case: CaseSpec, folders: Sequence[Path], parallel: int) -> dict[str, Any]:
    """Grade each folder one scenario per run (sequentially and ``parallel`` at once) and in
    scenario groups; compare the verdicts."""
    ways: list[tuple[str, dict[str, Any]]] = [("sequential", {"group_scenarios": False})]
    if parallel > 1:
        ways.append((f"parallel-{parallel}", {"group_scenarios": False, "parallel_scenarios": parallel}))
    ways.append(("grouped", {}))
    ways.append(("early-stop", {}))
    oracle_device_s = 0.0
    warm = Grader(case, sandbox="bwrap", cache=False)
    if warm.oracles is not None:  # computed once per scenario, then shared: keep it out of the ways' figures
        oracle_device_s = sum(warm.oracles.ensure(s)[1] for s in case.scenarios)
    rows = []
    for folder in folders:
        row: dict[str, Any] = {"revision": folder.name}
        for label, options in ways:
            grader = Grader(case, sandbox="bwrap", cache=False, **options)
            started = time.perf_counter()
            receipt = grader.grade_dir(folder, stop_at_first_fail=label == "early-stop")
            row[label] = {"status": receipt.status, "wall_seconds": time.perf_counter() - started,
                          "device_seconds": receipt.device_seconds,
                          "verdicts": {o.scenario: o.status for o in receipt.outcomes},
                          "reasons": {o.scenario: o.reason for o in receipt.outcomes},
                          "grouped": [o.scenario for o in receipt.outcomes if o.grouped]}  # fmt: skip
        first = row["sequential"]
        row["same_verdicts"] = all(
            row[label]["verdicts"] == first["verdicts"] and row[label]["reasons"] == first["reasons"]
            for label, _ in ways
            if label != "early-stop"
        ) and (
            row["early-stop"]["status"] == first["status"]
            and all(first["verdicts"][name] == v for name, v in row["early-stop"]["verdicts"].items())
        )
        rows.append(row)
    return {"case": case.id, "parallel": parallel, "ways": [label for label, _ in ways], "revisions": rows,
            "oracle_device_seconds": oracle_device_s}  # fmt: skip


def real_grading(run_dir: Path) -> dict[str, Any]:
    """Per case: grader device-seconds per revision, solver device-seconds, ratios, time split."""
    layout = RunLayout(run_dir)
    plan = load_plan(layout)
    report = json.loads(layout.grading_report.read_text())
    adjudications = [json.loads(layout.adjudication(e.id).read_text()) for e in plan.episodes
                     if layout.adjudication(e.id).exists()]  # fmt: skip
    cases = {}
    for case in plan.spec.cases:
        trees = [t for t in report["per_tree"] if t["case"] == case]
        solver = sum(a["summary"]["solver_device_seconds"] for a in adjudications if a["case"] == case)
        deduped = sum(t["device_seconds"] for t in trees)
        without = sum(t["device_seconds"] * t["submissions"] for t in trees)
        cases[case] = {
            "revisions": sum(t["submissions"] for t in trees),
            "unique_trees": len(trees),
            "grader_device_seconds_per_revision": deduped / len(trees) if trees else None,
            "solver_device_seconds": solver,
            "grader_device_seconds": deduped,
            "grader_device_seconds_without_dedup": without,
            "ratio": deduped / solver if solver else None,
            "ratio_without_dedup": without / solver if solver else None,
            "time_split": time_split(layout, case, [t["tree"] for t in trees]),
        }
    solver = sum(a["summary"]["solver_device_seconds"] for a in adjudications)
    return {
        "run_dir": str(run_dir),
        "solver_device_seconds": solver,
        "grader_device_seconds": report["grader_device_seconds"],
        "grader_device_seconds_without_dedup": report["grader_device_seconds_without_dedup"],
        "ratio": report["grader_device_seconds"] / solver if solver else None,
        "ratio_without_dedup": report["grader_device_seconds_without_dedup"] / solver if solver else None,
        "cases": cases,
    }


def time_split(layout: RunLayout, case: str, trees: Sequence[str]) -> dict[str, float]:
    """Scenario wall seconds and the sum of every timing the harness reported (``launch_s``,
    ``startup_s``, ``train_s``, ``oracle_s``, …; each case reports its own set)."""
    split: dict[str, float] = {"scenarios": 0.0, "scenario_s": 0.0}
    for tree in trees:
        receipt = load_receipt(layout.receipt(case, tree))
        if receipt is None:
            continue
        for outcome in receipt.outcomes:
            split["scenarios"] += 1
            split["scenario_s"] += outcome.duration_s
            for key, value in outcome.timings.items():
                split[key] = split.get(key, 0.0) + float(value or 0.0)
    return split


def _number(value: float | None, digits: int = 2) -> str:
    return "n/a" if value is None else f"{value:.{digits}f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--real", type=Path)
    parser.add_argument("--regrade", nargs="*", default=[])
    parser.add_argument("--parallel", type=int, default=2, help="scenarios at once (0 or 1: skip that way)")
    args = parser.parse_args()
    console = Console()
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="trainfail-bench-grading-") as scratch:
        echo = load_case(ECHO_CASE)
        results["echo"] = both_ways(echo, revisions(echo, Path(scratch) / "echo"), args.parallel)
        results["regrade"] = []
        for case_id in args.regrade:
            case = resolve_case(case_id)
            folders = revisions(case, Path(scratch) / case.name)
            results["regrade"].append(both_ways(case, folders, args.parallel))
    if args.real:
        results["real"] = real_grading(args.real)
    for block in [results["echo"], *results["regrade"]]:
        for row in block["revisions"]:
            ways = ", ".join(
                f"{label} {row[label]['wall_seconds']:.1f} s / {row[label]['device_seconds']:.1f} dev-s"
                for label in block["ways"]
            )
            console.print(f"{block['case']} {row['revision']}: {ways}; same verdicts: {row['same_verdicts']}")
        for label in block["ways"][1:]:
            base = sum(r["sequential"]["device_seconds"] for r in block["revisions"])
            other = sum(r[label]["device_seconds"] for r in block["revisions"])
            console.print(f"  {block['case']}: {label} / sequential device-seconds = {other / base:.2f}")
    if args.real:
        real = results["real"]
        console.print(f"real batch: grader/solver {_number(real['ratio'])} "
                      f"(without dedup {_number(real['ratio_without_dedup'])})")  # fmt: skip
        for case, c in real["cases"].items():
            console.print(f"  {case}: {_number(c['grader_device_seconds_per_revision'], 0)} grader dev-s per "
                          f"revision; ratio {_number(c['ratio'])} (without dedup {_number(c['ratio_without_dedup'])}); "
                          f"time split {json.dumps({k: round(v) for k, v in c['time_split'].items()})}")  # fmt: skip
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "grading.json").write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
