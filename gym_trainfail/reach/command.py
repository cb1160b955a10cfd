"""``trainfail reach CASE``: measure TrainCheck's reach on a case and store its record."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from gym_trainfail.cases import CaseSpec
from gym_trainfail.errors import TrainFailError
from gym_trainfail.reach import load_spec, measure_reach, record_path, record_status, spec_path, write_record
from gym_trainfail.reach.record import MARKDOWN_HEADER, markdown_row
from gym_trainfail.registry import default_registry, resolve_case

out = Console(width=None if sys.stdout.isatty() else 200)
err = Console(stderr=True)


def reach_options(p: argparse.ArgumentParser) -> None:
    """The ``reach`` command's arguments."""
    p.add_argument("case", nargs="?", help="case id, or a case folder")
    p.add_argument("--sandbox", default="auto", help="auto, bwrap, docker or process (default: auto)")
    p.add_argument(
        "--variants",
        nargs="+",
        metavar="NAME",
        help="measure only these variants of the case's reach spec (the default variant is always measured)",
    )
    p.add_argument(
        "--status", action="store_true", help="show the stored record and whether it is current; run nothing"
    )
    p.add_argument(
        "--table", action="store_true", help="print every registered case's record as the Markdown table of docs/"
    )
    p.add_argument("--no-write", action="store_true", help="measure, but leave the case's record as it is")
    p.add_argument("--json", action="store_true")


def cmd_reach(args: argparse.Namespace) -> int:
    """Run TrainCheck's workflow on the case's pipeline (or show its record with ``--status``)."""
    if args.table:
        print("\n".join([MARKDOWN_HEADER, *(markdown_row(c) for c in default_registry())]))
        return 0
    if not args.case:
        raise TrainFailError("name a case (id or folder), or pass --table")
    case = resolve_case(args.case)
    if args.status:
        status = record_status(case)
        if args.json:
            print(json.dumps({"case": case.id, "state": status.state, "reason": status.reason,
                              "record": status.record}, indent=2))  # fmt: skip
        else:
            out.print(Text(f"{case.id}: {status.state}: {status.headline()}"))
        return 0 if status.state == "current" else 1
    spec = load_spec(spec_path(case.grader_dir))
    if args.variants:
        for name in args.variants:
            spec.variant(name)  # refuse an unknown name before minutes of work
    with err.status(Text(f"TrainCheck reach on {case.id}")) as spinner:

        def progress(text: str) -> None:
            spinner.update(Text(f"{case.id}: {text}"))
            err.print(Text(f"  {text}"), highlight=False)

        record = measure_reach(case, sandbox=args.sandbox, variants=args.variants, progress=progress, spec=spec)
    if not args.no_write:
        write_record(case, record)
    if args.json:
        print(json.dumps(record, indent=2))
    else:
        _print(case.id, record)
        if not args.no_write:
            out.print(Text(f"record written to {record_path(case)}"))
    errors = record["summary"]["errors"]
    if errors and len(errors) == len(record["variants"]):
        raise TrainFailError(f"every variant failed: {errors}; run with --no-write after fixing the reach spec")
    return 0


def _print(case_id: str, record: dict[str, Any]) -> None:
    table = Table(title=f"TrainCheck reach: {case_id}")
    for column in ("variant", "invariants", "failing", "healthy (false alarms)", "failing only", "culprit",
                   "first step", "s", "device-s", "error"):  # fmt: skip
        table.add_column(column)
    for v in record["variants"]:
        failing, healthy = v["failing"] or {}, v["healthy"] or {}
        table.add_row(
            escape(v["name"]), str(v["invariants"]), str(failing.get("violations", "—")),
            str(healthy.get("violations", "—")), str(v["failing_only"]),
            "yes" if v["culprit_named"] else "no", str(v["first_violating_step"]), f"{v['seconds']:.0f}",
            f"{v['device_seconds']:.0f}", escape(v["error"] or ""),
        )  # fmt: skip
    out.print(table)


def reach_json(case: CaseSpec) -> dict[str, object]:
    """A case's reach record for ``trainfail cases --json``: its state and summary."""
    status = record_status(case)
    record = status.record or {}
    return {
        "state": status.state,
        "reason": status.reason,
        "headline": status.headline(),
        "summary": record.get("summary"),
        "measured": record.get("measured"),
    }


def print_reach(console: Console, cases: list[CaseSpec]) -> None:
    """One line per case under ``trainfail cases``: what TrainCheck's workflow sees on it."""
    table = Table(title="TrainCheck reach (trainfail reach CASE)")
    table.add_column("id")
    table.add_column("state")
    table.add_column("TrainCheck's workflow on the case's pipeline")
    for case in cases:
        status = record_status(case)
        table.add_row(escape(case.id), status.state, escape(status.headline()))
    console.print(table)
