"""``trainfail run``, ``grade`` and ``demo``: episodes played and graded, and their tables."""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

from rich.markup import escape
from rich.table import Table

from gym_trainfail import demo
from gym_trainfail.agent import load_agent
from gym_trainfail.cases import CaseSpec
from gym_trainfail.cli.common import (
    check_sandbox,
    chosen_judge,
    ensure_runtime,
    err,
    fail,
    headline,
    out,
    short,
    spinner,
)
from gym_trainfail.diagnosis.judges import Judge, RubricJudge
from gym_trainfail.diagnosis.milestones import LABELS, MILESTONES
from gym_trainfail.episode import EpisodeResult, RunGrades, grade_run, resume_episode, run_episode
from gym_trainfail.errors import ToolError, TrainFailError
from gym_trainfail.files import apply_patch
from gym_trainfail.grading import Grader, Receipt, ScenarioOutcome
from gym_trainfail.hashing import TreeRefusedError
from gym_trainfail.registry import resolve_case
from gym_trainfail.revisions import RevisionLog

#: The main job's case (`make demo`): of the cases, the one whose reference and noop grade fastest
#: (27 s on a quiet 2-core machine, against 58 s for DDPTokenAverage), for a first run within 2 minutes.
DEMO_CASE = "TrainFail/ResumeSkipBatches-v1"


def cmd_run(args: argparse.Namespace) -> int:
    if args.resume is not None:
        check_sandbox(args.sandbox)
        with spinner(f"resuming {args.resume}"):
            result = resume_episode(args.resume, sandbox=None if args.sandbox == "auto" else args.sandbox,
                                    grade_on_end=not args.no_grade)  # fmt: skip
    else:
        if not args.case or not args.agent:
            raise TrainFailError("run needs --case and --agent (or --resume RUN_DIR)")
        case = resolve_case(args.case).with_profile(args.profile)
        check_sandbox(args.sandbox)
        options = _agent_options(args)
        agent = load_agent(args.agent, **options)
        ensure_runtime(args.arm)  # minutes on first use: only after every argument checked out
        run_dir = args.out or Path("runs") / f"{time.strftime('%Y%m%d-%H%M%S')}-{case.name}-{args.arm}-{agent.name}"
        with spinner(f"{agent.name} playing {case.id} ({args.arm})"):
            result = run_episode(
                agent,
                case=case,
                arm=args.arm,
                sandbox=args.sandbox,
                run_dir=run_dir,
                seed=args.seed,
                grade_on_end=not args.no_grade,
                agent_options=options,
            )
    if args.json:
        print(json.dumps(_episode_json(result), indent=2))
    else:
        _print_episodes([result])
    return 0


def _agent_options(args: argparse.Namespace) -> dict[str, Any]:
    options: dict[str, Any] = {}
    if args.model:
        options["model"] = args.model
    if args.base_url:
        options["base_url"] = args.base_url
    for item in args.agent_option:
        key, sep, raw = item.partition("=")
        if not sep or not key:
            raise TrainFailError(f"--agent-option expects KEY=VALUE, got {item!r}")
        try:
            options[key] = json.loads(raw)
        except json.JSONDecodeError:
            options[key] = raw
    return options


def cmd_grade(args: argparse.Namespace) -> int:
    if args.case or args.patch or args.tree:
        try:
            return _grade_submission(args)
        except TrainFailError as exc:  # could not grade: exit 2, apart from a failing grade
            return fail(str(exc), exc, bool(getattr(args, "debug", False)), status=2)
    if args.run_dir is None:
        raise TrainFailError("give an episode's run directory, or --case ID with --patch FILE or --tree DIR")
    if args.profile:
        raise TrainFailError("--profile goes with --case; an episode is graded at the profile it ran at")
    if not (args.run_dir / "episode.json").exists():
        raise TrainFailError(f"{args.run_dir} is not an episode run directory (no episode.json)")
    check_sandbox(args.sandbox)
    grades = _grade_with_progress(args.run_dir, args.sandbox, chosen_judge(args), cache=not args.no_cache)
    if args.json:
        print(json.dumps(grades.to_json(), indent=2))
    else:
        _print_grades(grades)
    return 0


def _grade_submission(args: argparse.Namespace) -> int:
    """``grade --case ID --patch FILE|--tree DIR``: graded exactly like a submitted revision
    (same snapshot rules, sandboxes, receipts and scenario groups). Exit 0 pass, 1 fail,
    2 could not grade."""
    if args.run_dir is not None or not args.case or (args.patch is None) == (args.tree is None):
        raise TrainFailError("give --case ID and exactly one of --patch FILE or --tree DIR (and no run directory)")
    source = args.patch if args.patch is not None else args.tree
    if args.patch is not None and not args.patch.is_file():
        raise TrainFailError(f"--patch {args.patch}: no such file")
    if args.tree is not None and not args.tree.is_dir():
        raise TrainFailError(f"--tree {args.tree}: no such folder")
    case = resolve_case(args.case).with_profile(args.profile)
    check_sandbox(args.sandbox)
    ensure_runtime("control")
    with tempfile.TemporaryDirectory(prefix="trainfail-grade-cli-") as scratch:
        workspace = Path(scratch) / "workspace"
        if args.patch is not None:
            shutil.copytree(case.workspace_dir, workspace, symlinks=True)
        # The revision is what a submit would record: snapshot rules, exclusions and limits.
        log = RevisionLog(Path(scratch) / "run")
        try:
            if args.patch is not None:
                apply_patch(workspace, args.patch)
            number, tree = log.record(workspace if args.patch is not None else args.tree, case.workspace_exclude)
        except (ToolError, TreeRefusedError) as exc:
            raise TrainFailError(f"{source} cannot be graded as a revision: {exc}") from None
        grader = Grader(case, sandbox=args.sandbox, cache=not args.no_cache)
        with spinner(f"grading {source} on {case.id}") as progress:

            def hook(scenario: str, outcome: ScenarioOutcome | None) -> None:
                if outcome is None:
                    progress.running(f"grading {scenario}")
                else:
                    progress.done(f"{scenario}: {outcome.status} ({outcome.duration_s:.1f} s)")

            receipt = grader.grade_revision(log, number, tree.digest, progress=hook)
    if args.json:
        print(json.dumps(receipt.to_json(), indent=2, default=str))
    else:
        print_receipt(case, receipt)
    return {"pass": 0, "fail": 1}.get(receipt.status, 2)


def print_receipt(case: CaseSpec, receipt: Receipt) -> None:
    table = Table(title=f"{case.id}: tree {receipt.tree[:12]}")
    for column in ("scenario", "kind", "verdict", "measured", "threshold", "reason"):
        table.add_column(column)
    for outcome in receipt.outcomes:
        key, value = headline(outcome)
        threshold = outcome.metrics.get("threshold", "—")
        table.add_row(escape(outcome.scenario), outcome.kind, outcome.status, escape(f"{key} {value}".strip() or "—"),
                      escape(str(threshold)), escape(outcome.reason))  # fmt: skip
    out.print(table)
    out.print(f"{receipt.status}: {sum(o.status == 'pass' for o in receipt.outcomes)}/{len(receipt.outcomes)} pass, "
              f"{receipt.device_seconds:.1f} grader device-seconds")  # fmt: skip


def _grade_with_progress(run_dir: Path, sandbox: str, judge: Judge | None = None, *, cache: bool = True) -> RunGrades:
    with spinner(f"grading {run_dir}") as progress:

        def hook(revision: int, scenario: str, outcome: ScenarioOutcome | None) -> None:
            if outcome is None:
                progress.running(f"grading revision {revision}: {scenario}")
            else:
                progress.done(f"revision {revision} · {scenario}: {outcome.status} ({outcome.duration_s:.1f} s)")

        return grade_run(run_dir, sandbox=sandbox, progress=hook, judge=judge, cache=cache)


def cmd_demo(args: argparse.Namespace) -> int:
    """``trainfail demo``: see :mod:`gym_trainfail.demo` (the phases and their times)."""
    case = resolve_case(args.case)
    check_sandbox(args.sandbox)
    clock = demo.PhaseClock()
    with clock.phase("runtime") as phase, spinner("the control runtime") as progress:
        _, phase.note = demo.ensure_demo_runtime("control", progress.both)
    results: list[EpisodeResult] = []
    stamp = time.strftime("%Y%m%d-%H%M%S")
    with clock.phase("episodes") as phase:
        for agent_name in ("reference", "noop"):
            agent = load_agent(agent_name)
            run_dir = args.out / f"{stamp}-{agent_name}"
            with spinner(f"{agent_name} agent playing {case.id} (sandbox {args.sandbox}); grading takes minutes"):
                started = time.monotonic()
                results.append(run_episode(agent, case=case, sandbox=args.sandbox, run_dir=run_dir))
            err.print(
                escape(
                    f"  {agent_name}: reward {results[-1].reward:.0f} in {time.monotonic() - started:.0f} s → {run_dir}"
                )
            )
        grades = [_grade_with_progress(r.run_dir, args.sandbox) for r in results]
        phase.note = f"reference and noop on {case.id}, graded ({args.sandbox})"
    if args.json:
        print(json.dumps([_episode_json(r) | {"grades": g.to_json()} for r, g in zip(results, grades, strict=True)],
                         indent=2))  # fmt: skip
        err.print(escape("  ".join(f"{p.name} {demo.format_seconds(p.seconds)}" for p in clock.table())))
        return 0
    _print_episodes(results, grades)
    _print_phases(clock.table())
    return 0


def _print_phases(phases: list[demo.Phase]) -> None:
    table = Table(title="where the time went")
    for column in ("phase", "time", "how"):
        table.add_column(column)
    for p in phases:
        table.add_row(escape(p.name), demo.format_seconds(p.seconds), escape(p.note))
    out.print(table)


def _episode_json(result: EpisodeResult) -> dict[str, Any]:
    return {
        "run_dir": str(result.run_dir),
        "case": result.case,
        "arm": result.arm,
        "agent": result.agent,
        "reward": result.reward,
        "reward_status": result.reward_status,
        "final_revision": result.final_revision,
        "summary": result.summary.to_dict(),
    }


def _print_episodes(results: list[EpisodeResult], grades: list[RunGrades] | None = None) -> None:
    table = Table(title="episodes")
    for column in ("agent", "case", "arm", "reward", "revisions", "first valid", "raw s", "adjusted s",
                   "tokens", "solver dev-s", "run dir"):  # fmt: skip
        table.add_column(column)
    for index, result in enumerate(results):
        s = result.summary
        first = "—"
        if grades is not None:
            valid = grades[index].first_valid
            rule = grades[index].adjudication
            first = f"rev {valid.revision} @ {valid.cost.adjusted_seconds:.0f} s" if valid else rule.reason
        table.add_row(escape(result.agent), escape(result.case), result.arm,
                      escape(f"{result.reward:.0f} ({result.reward_status})"), str(s.submits), escape(first),
                      f"{s.raw_seconds:.1f}", f"{s.adjusted_seconds:.1f}", str(s.total_tokens),
                      f"{s.solver_device_seconds:.1f}", escape(short(result.run_dir)))  # fmt: skip
    out.print(table)


def _print_grades(grades: RunGrades) -> None:
    table = Table(title=escape(f"revisions of {short(grades.run_dir)} ({grades.case})"))
    for column in (
        "revision",
        "tree",
        "verdict",
        "scenarios",
        "raw s",
        "adjusted s",
        "tokens",
        "solver dev-s",
    ):
        table.add_column(column)
    for r in grades.revisions:
        passed = sum(o.status == "pass" for o in r.receipt.outcomes)
        table.add_row(str(r.revision), r.tree[:12], r.status, f"{passed}/{len(r.receipt.outcomes)} pass",
                      f"{r.cost.raw_seconds:.1f}", f"{r.cost.adjusted_seconds:.1f}", str(r.cost.total_tokens),
                      f"{r.cost.solver_device_seconds:.1f}")  # fmt: skip
    out.print(table)
    first = grades.first_valid
    if first is None and grades.adjudication.blocked_by is not None:
        out.print(f"first valid repair: {escape(grades.adjudication.reason)} (its verdict must be known first)")
    elif first is None:
        out.print("no valid repair among the submitted revisions")
    else:
        c = first.cost
        out.print(
            f"first valid repair: revision {first.revision} after {c.raw_seconds:.1f} s raw / "
            f"{c.adjusted_seconds:.1f} s adjusted, {c.total_tokens} tokens, "
            f"{c.solver_device_seconds:.1f} solver device-seconds"
        )
    out.print(
        f"grading: {grades.unique_trees} distinct tree(s), {grades.grader_device_seconds:.1f} grader device-seconds"
    )
    if grades.diagnosis is not None:
        print_milestones(grades.diagnosis)


def print_milestones(diagnosis: dict[str, Any]) -> None:
    judge = diagnosis.get("judge")
    title = f"milestones ({escape(judge)} judge; {_heldout_recall(diagnosis)})" if judge else "milestones (no rubric)"
    table = Table(title=title)
    if judge == RubricJudge.identity:
        table.caption = ("the deterministic rubric judge can miss a correct statement: its milestone times are upper "
                         "bounds (a missed statement delays a milestone)")  # fmt: skip
    for column in ("milestone", "raw s", "adjusted s", "turn", "step", "tokens", "solver dev-s", "what was said"):
        table.add_column(column)
    for name in MILESTONES:
        m = diagnosis["milestones"].get(name)
        if m is None:
            table.add_row(LABELS[name], "—", "—", "—", "—", "—", "—", "")
            continue
        low, high = m["tokens_low"], m["tokens_high"]
        tokens = str(high) if low == high else f"{low}–{high}"
        table.add_row(LABELS[name], f"{m['raw_s']:.1f}", f"{m['adjusted_s']:.1f}", str(m["turn"]), str(m["step"]),
                      tokens, f"{m['solver_device_seconds']:.1f}", escape(m["excerpt"][:120]))  # fmt: skip
    out.print(table)
    if (engaged := diagnosis.get("engagement")) is not None:
        out.print(f"TrainCheck engagement: {escape(str(engaged['level']))}")
    scope = diagnosis["validation"]
    steps = f", {scope['steps']} updates trained" if scope.get("steps") is not None else ""
    out.print(f"validation: {scope['jobs']} job(s), {scope['device_seconds']:.1f} device-s, "
              f"{scope['distinct_commands']} distinct command(s), ranks {scope['ranks'] or '—'}{steps}")  # fmt: skip


def _heldout_recall(diagnosis: dict[str, Any]) -> str:
    """``held-out recall 83%, pre-run hypotheses 75%`` (or why there is none) for a milestone table's title."""
    found = diagnosis.get("judge_heldout")
    if not isinstance(found, dict):
        return "no held-out set"
    if "error" in found:
        return "held-out set unusable"
    recall, hypotheses = found.get("recall"), found.get("hypothesis_recall")
    text = f"held-out recall {recall:.0%}" if isinstance(recall, float) else "held-out recall —"
    return text + (f", pre-run hypotheses {hypotheses:.0%}" if isinstance(hypotheses, float) else "")
