"""``trainfail batch`` and ``leaderboard``: cases x arms x agents x trials, graded and rendered."""

from __future__ import annotations

import argparse
import json
from typing import Any

from rich.markup import escape

from gym_trainfail.batch import (
    BatchPlan,
    Counts,
    GradingReport,
    LocalRunner,
    RunLayout,
    adjudicate_batch,
    default_workers,
    grade_batch,
    load_plan,
    make_plan,
    resolve_cases,
    run_episodes,
    write_plan,
)
from gym_trainfail.batch.grade import TreeJob
from gym_trainfail.batch.progress import describe, episode_progress
from gym_trainfail.batch.ray_runner import RayRunner, describe_cluster
from gym_trainfail.batch.runner import Runner
from gym_trainfail.cli.common import (
    check_sandbox,
    chosen_judge,
    ensure_runtime,
    err,
    out,
    short,
    spinner,
)
from gym_trainfail.devices import DevicePool
from gym_trainfail.errors import TrainFailError
from gym_trainfail.grading import Receipt
from gym_trainfail.leaderboard import render_leaderboard
from gym_trainfail.sandbox import resolve_backend


def cmd_batch(args: argparse.Namespace) -> int:
    judge = chosen_judge(args)
    check_sandbox(args.sandbox, probe=not args.ray)  # Ray nodes probe their own backends
    layout = RunLayout(args.out)
    plan = _batch_plan(args, layout)
    err.print(escape(f"plan: {len(plan.episodes)} episodes → {short(layout.plan)}"))
    if args.stage in ("all", "episodes"):
        # Ray nodes build their own runtimes; the driver needs the control one to grade.
        for arm in sorted({"control"} if args.ray else {*plan.spec.arms, "control"}):
            ensure_runtime(arm)
        counts = _play(args, layout, plan)
        err.print(escape(f"episodes: {counts.done} done, {counts.gave_up} gave up ({describe(counts)})"))
    result: dict[str, Any] = {"run_dir": str(layout.root), "episodes": len(plan.episodes)}
    if args.stage in ("all", "grade"):
        report = _grade_batch(args, layout, plan)
        result["grading"] = {k: v for k, v in report.to_json().items() if k != "per_tree"}
    if args.stage in ("all", "grade", "adjudicate"):
        adjudications = adjudicate_batch(layout, plan, force=args.stage == "adjudicate", judge=judge)
        result["adjudicated"] = len(adjudications)
        err.print(escape(f"adjudicated {len(adjudications)} episodes → {short(layout.root / 'adjudication')}"))
        err.print(escape(f"next: trainfail leaderboard {short(layout.root)}"))
    if args.json:
        print(json.dumps(result, indent=2))
    return 0


def _batch_plan(args: argparse.Namespace, layout: RunLayout) -> BatchPlan:
    given = [args.cases, args.arms, args.agents, args.trials]
    if all(v is None for v in given):
        plan = load_plan(layout)
        if args.profile and args.profile != plan.spec.profile:
            raise TrainFailError(f"{layout.root} holds a batch at profile {plan.spec.profile!r}; resume it without "
                                 f"--profile, or give a new --out for profile {args.profile!r}")  # fmt: skip
        return plan
    if any(v is None for v in given):
        raise TrainFailError("a new batch needs --cases, --arms, --agents and --trials (or none, to resume --out)")
    plan = make_plan(
        [case.with_profile(args.profile) for case in resolve_cases(args.cases)],
        [a.strip() for a in args.arms.split(",") if a.strip()],
        args.agents,
        args.trials,
        sandbox=args.sandbox,
        agent_options=_batch_agent_options(args.agent_option),
        max_attempts=args.max_attempts,
    )
    return write_plan(layout, plan)


def _batch_agent_options(items: list[str]) -> dict[str, dict[str, Any]]:
    options: dict[str, dict[str, Any]] = {}
    for item in items:
        agent, colon, rest = item.partition(":")
        key, equals, raw = rest.partition("=")
        if not (colon and equals and agent and key):
            raise TrainFailError(f"--agent-option expects AGENT:KEY=VALUE, got {item!r}")
        try:
            options.setdefault(agent, {})[key] = json.loads(raw)
        except json.JSONDecodeError:
            options.setdefault(agent, {})[key] = raw
    return options


def _play(args: argparse.Namespace, layout: RunLayout, plan: BatchPlan) -> Counts:
    runner: Runner
    if args.ray:
        runner = RayRunner(layout, args.ray, workers=args.workers, sandbox=plan.spec.sandbox,
                           agent_options=plan.spec.agent_options)  # fmt: skip
        err.print(escape(f"ray: {describe_cluster()}; {runner.slots} episodes at once"))
    else:
        runner = LocalRunner(layout, args.workers or default_workers())
        pool = DevicePool(backend=resolve_backend(plan.spec.sandbox))
        err.print(escape(f"local: {runner.slots} worker(s); devices: {pool.describe()}"))
    with episode_progress(err, len(plan.episodes)) as hook:
        return run_episodes(layout, plan, runner, hook)


def _grade_batch(args: argparse.Namespace, layout: RunLayout, plan: BatchPlan) -> GradingReport:
    with spinner("grading the batch's revisions") as progress:

        def hook(job: TreeJob, receipt: Receipt | None) -> None:
            label = f"{job.case} tree {job.tree[:12]} ({job.submissions} submission(s))"
            if receipt is None:
                progress.running(f"grading {label}")
            else:
                progress.done(f"{label}: {receipt.status} ({receipt.duration_s:.0f} s, "
                              f"{receipt.device_seconds:.0f} grader device-s)")  # fmt: skip

        report = grade_batch(layout, plan, workers=args.grade_workers, parallel_scenarios=args.parallel_scenarios,
                             progress=hook)  # fmt: skip
    err.print(
        f"grading: {report.revisions} revision(s), {report.unique_trees} distinct tree(s): {report.graded_now} "
        f"graded now, {report.node_cache_hits} from this node's receipt cache, {report.reused} already in the batch; "
        f"{report.grader_device_seconds:.0f} grader device-s ({report.grader_device_seconds_without_dedup:.0f} "
        f"without deduplication, {report.grader_device_seconds_spent_now:.0f} spent now)"
    )
    return report


def cmd_leaderboard(args: argparse.Namespace) -> int:
    out_dir = args.out or args.run_dir / "leaderboard"
    if (judge := chosen_judge(args)) is not None:  # the milestone tables come from this judge's adjudications
        layout = RunLayout(args.run_dir)
        with spinner(f"judging diagnosis statements with {judge.identity}"):
            adjudicate_batch(layout, load_plan(layout), judge=judge)
    written = render_leaderboard(args.run_dir, out_dir, title=args.title)
    if args.json:
        print(json.dumps({"out": str(out_dir), "files": [str(p) for p in written]}, indent=2))
        return 0
    for path in written:
        out.print(escape(f"wrote {short(path)}"))
    return 0
