"""``trainfail qualify`` (a case's admission gate, its table and record) and ``case new``."""

from __future__ import annotations

import argparse
import json
import time

from rich.markup import escape
from rich.table import Table

from gym_trainfail.admission import (
    REFRESH_ALL,
    current_digests,
    previous_hints,
    record_from_qualification,
    record_path,
    refresh_diagnosis,
    write_record,
)
from gym_trainfail.cases import DEFAULT_PROFILE, CaseSpec
from gym_trainfail.cli.common import (
    check_sandbox,
    chosen_judge,
    ensure_runtime,
    err,
    headline,
    out,
    short,
    spinner,
)
from gym_trainfail.diagnosis.fixtures import FixtureCheck
from gym_trainfail.diagnosis.heldout import summary_line
from gym_trainfail.diagnosis.judges import Judge
from gym_trainfail.errors import TrainFailError
from gym_trainfail.grading import ScenarioOutcome
from gym_trainfail.qualify import Qualification, margins, qualify, qualify_diagnosis
from gym_trainfail.registry import default_registry, resolve_case
from gym_trainfail.scaffold import scaffold_case


def cmd_qualify(args: argparse.Namespace) -> int:
    if args.all == bool(args.case):
        raise TrainFailError("name one case (id or folder), or pass --all (`make qualify` does)")
    if args.all:
        return _qualify_all(args)
    return qualify_one(args, resolve_case(args.case).with_profile(args.profile))


def _qualify_all(args: argparse.Namespace) -> int:
    """Every registered case in turn (``make qualify``), then one line per case with its seconds."""
    if args.out or args.json:
        raise TrainFailError("--all prints tables and writes records; run one case at a time for --out or --json")
    registry = default_registry()
    for folder, reason in registry.refused.items():  # still an error at the end: that case has no record
        err.print(escape(f"refused, not qualified: {folder}: {reason}"), highlight=False, soft_wrap=True)
    summary: list[tuple[str, int, str, float]] = []
    for case in registry:
        if args.profile not in (None, DEFAULT_PROFILE, *case.profiles):
            err.print(escape(f"{case.id} has no profile {args.profile!r}: skipped"), highlight=False)
            continue
        started = time.monotonic()
        states: list[str] = []
        code = qualify_one(args, case.with_profile(args.profile), states)
        summary.append((case.id, code, states[0] if states else ("done" if code == 0 else "REFUSED"),
                        time.monotonic() - started))  # fmt: skip
    for case_id, _, state, seconds in summary:
        out.print(escape(f"{case_id:<40} {state:<28} {seconds:6.0f} s"), highlight=False)
    return 0 if all(code == 0 for _, code, _, _ in summary) and not registry.refused else 1


def qualify_one(args: argparse.Namespace, case: CaseSpec, states: list[str] | None = None) -> int:
    """One case's gate (exit status 1 when its verdicts or its diagnosis rubric are refused);
    ``states`` gets a word on which."""
    judge = chosen_judge(args)
    if getattr(args, "diagnosis_only", False):
        return _qualify_diagnosis_only(args, case, judge)
    check_sandbox(args.sandbox)
    if args.parallel < 1:
        raise TrainFailError(f"--parallel must be at least 1 (1 grades one variant at a time), got {args.parallel}")
    ensure_runtime("control")
    # What the verdicts are about, taken before any is made: a record is written only if the case,
    # its runtime lock and the harness are still the same when the gate ends.
    digests = current_digests(case)
    # the last record's failing scenarios order the wrong repairs' work (never their verdicts)
    hints = previous_hints(case) if args.wrong_repairs else {}
    with spinner(f"qualifying {case.id}") as progress:

        def hook(variant: str, scenario: str, outcome: ScenarioOutcome | None) -> None:
            if outcome is None:
                progress.running(f"{variant}: {scenario}")
            else:
                progress.done(f"{variant:<22} {scenario:<24} {outcome.status:<5} {outcome.duration_s:6.1f} s")

        result = qualify(case, sandbox=args.sandbox, repeats=args.repeats, wrong_repairs=args.wrong_repairs,
                         progress=hook, judge=judge, hints=hints, parallel=args.parallel)  # fmt: skip
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(result.to_json(), indent=2, default=str))
    if args.json:
        print(json.dumps(result.to_json(), indent=2, default=str))
    else:
        _print_qualification(case, result)
    write_admission_record(args, case, result, digests)
    if states is not None:
        rubric = "" if result.rubric_admitted else ", rubric refused"
        states.append(f"admitted{rubric}" if result.admitted else "REFUSED")
    return 0 if result.admitted and result.rubric_admitted else 1


def _qualify_diagnosis_only(args: argparse.Namespace, case: CaseSpec, judge: Judge | None) -> int:
    result = Qualification(case=case.id, profile=case.profile)
    qualify_diagnosis(case, result, judge)
    if args.json:
        print(json.dumps({k: v for k, v in result.to_json().items() if k in ("case", "problems", "rubric", "heldout")}
                         | {"admitted": None}, indent=2))  # fmt: skip
    else:
        out.print(_rubric_line(result.rubric))
        if case.rubric is not None:
            out.print(escape(summary_line(result.heldout)), highlight=False)
        for problem in result.diagnosis_problems:
            out.print(f"  - {escape(problem)}")
    if refresh_diagnosis(case, result) is not None and not args.json:
        out.print(f"admission record's diagnosis figures refreshed: {record_path(case)}")
    return 1 if result.diagnosis_problems else 0


def write_admission_record(
    args: argparse.Namespace, case: CaseSpec, result: Qualification, digests: dict[str, str]
) -> None:
    """Rewrite the case's admission record after an admitted full gate (wrong repairs, forgeries
    and at least two repeats) over content that did not change while it ran (``digests``, taken
    before it started); say why not otherwise."""
    if not result.admitted:
        err.print("no admission record written: the case was refused")
        return
    changed = sorted(k for k, v in current_digests(case).items() if digests.get(k) != v)
    if changed:
        err.print(f"no admission record written: the {', '.join(changed)} changed while the case was being qualified "
                  "(its verdicts may be about two versions); qualify it again")  # fmt: skip
        return
    if not args.wrong_repairs or args.repeats < 2:
        err.print(
            "no admission record written: records come only from the full gate (--wrong-repairs, --repeats 2 "
            f"or more); `{REFRESH_ALL}` refreshes every case"
        )
        return
    path = write_record(case, record_from_qualification(case, result, sandbox=args.sandbox, repeats=args.repeats))
    err.print(escape(f"admission record written: {path}"), highlight=False)


def _print_qualification(case: CaseSpec, result: Qualification) -> None:
    at = "" if case.profile == DEFAULT_PROFILE else f" at profile {case.profile}"
    table = Table(title=f"qualification of {case.id}{at}")
    table.add_column("scenario")
    table.add_column("kind")
    for variant in result.variants:
        table.add_column(variant.label)
    keys: set[str] = set()
    for scenario in case.scenarios:
        row = [escape(scenario.name), scenario.kind]
        for variant in result.variants:
            found = next((o for o in variant.receipt.outcomes if o.scenario == scenario.name), None)
            if found is None:  # a wrong repair's grading stops at its first failing unit
                row.append("[dim]not run[/]")
                continue
            outcome = found
            colour = {"pass": "green", "fail": "red"}.get(outcome.status, "yellow")
            key, value = headline(outcome)
            keys.add(key)
            row.append(f"[{colour}]{outcome.status}[/] {value}")
        table.add_row(*row)
    table.caption = f"figure: {', '.join(sorted(k for k in keys if k))} (the judge's key metric)" if keys else None
    out.print(table)
    if result.forced_settings:
        out.print("\nsettings the grader forces away from the shipped config (grader/README.md):\n")
        out.print(escape(result.forced_settings), highlight=False)
    measured = [m for m in margins(result.variants) if m.healthy_worst is not None or m.failing_best is not None]
    if measured:
        out.print("\nmeasured figures: worst where the pipeline is right (reference, healthy scenarios), best where "
                  "it is not (unmodified, failure scenarios); tolerances go between:")  # fmt: skip
        for m in measured:
            worst = "—" if m.healthy_worst is None else f"{m.healthy_worst:.3g}"
            best = "—" if m.failing_best is None else f"{m.failing_best:.3g}"
            out.print(f"  {escape(m.metric)}: right ≤ {worst}, wrong ≥ {best}", highlight=False)
    if result.promise_table:
        out.print("\nwhat the workspace README promises, and the scenarios covering each class "
                  "(grader/promises.toml):\n")  # fmt: skip
        out.print(escape(result.promise_table), highlight=False)
    out.print(_rubric_line(result.rubric))
    if result.rubric is not None:
        out.print(escape(summary_line(result.heldout)), highlight=False)
    verdict = "[green]admitted[/]" if result.admitted else "[red]refused[/]"
    out.print(f"{verdict} in {result.seconds:.0f} s")
    for problem in result.problems:
        out.print(f"  - {escape(problem)}")
    if result.diagnosis_problems:
        out.print("[red]diagnosis rubric refused[/] (the case's verdicts stand; its milestones are measured with a "
                  "rubric below its floors, as the held-out figures say):")  # fmt: skip
        for problem in result.diagnosis_problems:
            out.print(f"  - {escape(problem)}")


def _rubric_line(check: FixtureCheck | None) -> str:
    if check is None:
        return "diagnosis rubric: none (grader/diagnosis/rubric.toml); diagnosis milestones will not be measured"

    def pct(value: float | None) -> str:
        return "—" if value is None else f"{value:.0%}"

    fixtures = check.true_positive + check.false_positive + check.false_negative + check.true_negative
    line = (f"diagnosis rubric ({escape(check.judge)} judge) on {fixtures} fixtures: precision "
            f"{pct(check.precision)}, recall {pct(check.recall)}")  # fmt: skip
    if check.undecided:
        line += f", {check.undecided} undecided"
    return line


def cmd_case(args: argparse.Namespace) -> int:
    case = scaffold_case(args.name, args.dir, namespace=args.namespace)
    out.print(escape(f"created {case.id} in {short(case.root)} (passes schema validation)"))
    out.print("next: put the real failure in workspace/, write the grader's oracle and scenarios, then run")
    out.print(escape(f"  trainfail qualify {short(case.root)} --wrong-repairs   (docs/case-authoring.md)"))
    return 0
