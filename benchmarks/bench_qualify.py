"""Seconds to qualify each case in full (repeats, reference, wrong repairs, forgeries).

    .venv/bin/python benchmarks/bench_qualify.py [--cases ID ...] [--no-hints] [--sandbox bwrap] [--parallel N]

Each case goes through the same gate as ``trainfail qualify ID --wrong-repairs`` (no receipt
cache; oracles as the state directory holds them), with the failing scenarios of its admission
record as hints (``--no-hints``: without, as on a case's first qualification), gradings
``--parallel`` at a time (default 2, as ``trainfail qualify``). Prints per-case
seconds, the seconds per kind of variant, and ratios against the run that wrote the record and
against the figure issue 21 started from. Verdicts are compared with the record too, so a fast run
that judged differently shows. The machine's load average is printed before and after, and kept
with each case's row: figures taken under load say so. benchmarks/results/qualify.json keeps the
newest row of every case benched (a run over some cases replaces their rows only), each with
its date and load. Figures, not assertions.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from gym_trainfail.admission import (
    RecordError,
    compare_verdicts,
    failing_hints,
    load_record,
    record_from_qualification,
)
from gym_trainfail.qualify import qualify
from gym_trainfail.registry import default_registry

RESULTS = Path(__file__).parent / "results"
#: Seconds per case (by name, any version) when issue 21 was filed: qualification inside the
#: test suite of the last landed CI run, 2 cores.
ISSUE_FIGURES = {
    "FSDPSourceCoherence": 361.0,
    "AdmissionBackwardOOM": 219.0,
    "DDPTokenAverage": 216.0,
    "TPClipGradNorm": 168.0,
}
#: The gate's goal per case on 2 cores.
GOAL_S = 150.0


def bench_case(case_id: str, *, sandbox: str, hints: bool, parallel: int = 2) -> dict[str, Any]:
    """One full qualification of ``case_id``, timed, with what its record says."""
    case = default_registry().get(case_id)
    try:
        record = load_record(case)
    except RecordError:
        record = None
    started = time.monotonic()
    result = qualify(
        case,
        sandbox=sandbox,
        repeats=2,
        wrong_repairs=True,
        hints=failing_hints(record, case.scenarios) if hints else None,
        parallel=parallel,
    )
    seconds = time.monotonic() - started
    by_kind: dict[str, float] = {}
    for variant in result.variants:
        by_kind[variant.kind] = by_kind.get(variant.kind, 0.0) + variant.receipt.duration_s
    fresh = record_from_qualification(case, result, sandbox=sandbox, repeats=2)
    return {
        "case": case_id,
        "seconds": round(seconds, 1),
        "by_kind": {k: round(v, 1) for k, v in by_kind.items()},
        "admitted": result.admitted,
        "problems": result.problems,
        "record_seconds": record.seconds if record else None,
        "issue_seconds": ISSUE_FIGURES.get(case.name),
        "verdicts_match_record": (not compare_verdicts(record, fresh)) if record else None,
        "hints": hints,
        "parallel": parallel,
    }


def _ratio(new: float, old: float | None) -> str:
    return f"{new / old:.2f}" if old else "—"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cases", nargs="+", help="case ids (default: every registered case)")
    parser.add_argument("--sandbox", default="bwrap")
    parser.add_argument("--no-hints", action="store_true", help="ignore the records' failing scenarios")
    parser.add_argument("--parallel", type=int, default=2, help="gradings at once (1: one at a time)")
    args = parser.parse_args()
    cases = args.cases or default_registry().ids()
    load_before = os.getloadavg()
    rows = []
    for index, case_id in enumerate(cases, 1):
        before = os.getloadavg()[0]
        rows.append(bench_case(case_id, sandbox=args.sandbox, hints=not args.no_hints, parallel=args.parallel))
        load = os.getloadavg()[0]
        rows[-1] |= {"load_before": round(before, 2), "load_after": round(load, 2),
                     "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}  # fmt: skip
        print(f"[{index}/{len(cases)}] {case_id}: {rows[-1]['seconds']:.0f} s (load {load:.1f})", flush=True)
    load_after = os.getloadavg()
    table = Table(title=f"full qualification per case ({os.cpu_count()} cores, sandbox {args.sandbox})")
    # a kind's seconds add its variants' gradings, which overlap when graded side by side
    for column in ("case", "seconds", "graded s by kind", "vs record", "vs issue", f"≤ {GOAL_S:.0f} s", "verdicts"):
        table.add_column(column)
    for row in rows:
        kinds = ", ".join(f"{k} {v:.0f}" for k, v in row["by_kind"].items())
        match = {None: "no record", True: "as recorded", False: "DIFFER"}[row["verdicts_match_record"]]
        table.add_row(
            row["case"],
            f"{row['seconds']:.0f}",
            kinds,
            _ratio(row["seconds"], row["record_seconds"]),
            _ratio(row["seconds"], row["issue_seconds"]),
            "yes" if row["seconds"] <= GOAL_S else "no",
            match if row["admitted"] else "REFUSED",
        )
    console = Console(width=200)
    console.print(table)
    total = sum(row["seconds"] for row in rows)
    console.print(f"all cases: {total:.0f} s; load average before {load_before[0]:.1f}, after {load_after[0]:.1f}")
    issue = [row for row in rows if row["issue_seconds"]]
    if issue:
        mine, theirs = sum(r["seconds"] for r in issue), sum(r["issue_seconds"] for r in issue)
        console.print(f"issue 21's {len(issue)} cases: {mine:.0f} s (goal 600 s; {theirs:.0f} s when filed)")
    RESULTS.mkdir(exist_ok=True)
    kept = merged(RESULTS / "qualify.json", rows)
    report = {"rows": kept, "total_s": round(sum(row["seconds"] for row in kept), 1)}
    (RESULTS / "qualify.json").write_text(json.dumps(report, indent=2) + "\n")


def merged(path: Path, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rows already in ``path`` (an unreadable file: none), each case's replaced by its row in
    ``rows``, new cases appended."""
    try:
        old = json.loads(path.read_text())["rows"]
        kept = {row["case"]: row for row in old if isinstance(row, dict) and isinstance(row.get("case"), str)}
    except (OSError, ValueError, KeyError, TypeError):
        kept = {}
    return list((kept | {row["case"]: row for row in rows}).values())


if __name__ == "__main__":
    main()
