"""Leaderboard tables from a batch's adjudications: one row per episode, per case × arm × agent
(with the spread across trials), the rubric milestones per case × agent and arm, and a paired
control-vs-treatment comparison per case (bootstrap intervals, exact McNemar test).

Infrastructure failures that exhausted their attempts (``gave-up``) and episodes whose grading
is incomplete are left out of every rate and counted in their own columns.
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from gym_trainfail.batch.layout import RunLayout
from gym_trainfail.batch.plan import BatchPlan, load_plan
from gym_trainfail.batch.status import read_status
from gym_trainfail.errors import TrainFailError
from gym_trainfail.leaderboard.milestone_columns import (
    ENGAGEMENT_LEVELS,
    MILESTONES,
    column,
    diagnosis_columns,
    judge_label,
    timed,
)
from gym_trainfail.leaderboard.stats import bootstrap_ci, mcnemar_exact, small_n_warning

CONTROL, TREATMENT = "control", "traincheck"
#: Metrics of the first valid revision (cost up to it), as episode-row columns.
FIRST_VALID_METRICS = ("first_valid_raw_s", "first_valid_adjusted_s", "first_valid_tokens", "first_valid_solver_dev_s")


@dataclass(frozen=True)
class Spread:
    """A metric across trials: count, mean, standard deviation, minimum, maximum."""

    n: int
    mean: float | None
    sd: float | None
    min: float | None
    max: float | None

    @classmethod
    def of(cls, values: Iterable[float | None]) -> Spread:
        found = [float(v) for v in values if v is not None]
        if not found:
            return cls(0, None, None, None, None)
        sd = statistics.stdev(found) if len(found) > 1 else 0.0
        return cls(len(found), statistics.fmean(found), sd, min(found), max(found))


@dataclass(frozen=True)
class Batch:
    """Everything a leaderboard needs from a run directory (``source``), or from a rendered
    leaderboard read back (see :mod:`~gym_trainfail.leaderboard.board`)."""

    source: Path
    plan: BatchPlan
    episodes: tuple[dict[str, Any], ...]
    gave_up: tuple[dict[str, Any], ...]
    grading: Mapping[str, Any]


def load_batch(run_dir: Path) -> Batch:
    """The plan, adjudications, give-ups and grading report of a batch run directory."""
    layout = RunLayout(run_dir)
    plan = load_plan(layout)
    rows, gave_up = [], []
    for planned in plan.episodes:
        status = read_status(layout, planned.id)
        state = status.state(plan.max_attempts)
        if state == "gave-up":
            reason = status.attempts[-1].reason if status.attempts else ""
            gave_up.append({"episode": planned.id, "case": planned.case, "arm": planned.arm,
                            "agent": planned.agent, "trial": planned.trial, "reason": reason})  # fmt: skip
            continue
        path = layout.adjudication(planned.id)
        if state == "done" and path.exists():
            rows.append(episode_row(json.loads(path.read_text())))
    if not rows and not gave_up:
        raise TrainFailError(f"{run_dir} has no adjudicated episodes yet; run `trainfail batch --out {run_dir}` first")
    grading = json.loads(layout.grading_report.read_text()) if layout.grading_report.exists() else {}
    return Batch(run_dir, plan, tuple(rows), tuple(gave_up), grading)


def episode_row(adjudication: Mapping[str, Any]) -> dict[str, Any]:
    """One flat row per episode, straight from its adjudication."""
    first = adjudication["first_valid"] or {}
    summary = adjudication["summary"]
    tools = adjudication["tools"]
    return {
        "episode": adjudication["episode"],
        "case": adjudication["case"],
        "arm": adjudication["arm"],
        "agent": adjudication["agent"],
        "trial": adjudication["trial"],
        "attempts": adjudication["attempts"],
        "infra_failures": adjudication["infra_failures"],
        "graded": adjudication["graded"],
        "solved": adjudication["solved"],
        "final_pass": adjudication["final_pass"],
        "final_status": adjudication["final_status"],
        "revisions": len(adjudication["revisions"]),
        "first_valid_revision": first.get("revision"),
        "first_valid_raw_s": first.get("raw_seconds"),
        "first_valid_adjusted_s": first.get("adjusted_seconds"),
        "first_valid_tokens": first.get("total_tokens"),
        "first_valid_solver_dev_s": first.get("solver_device_seconds"),
        "episode_raw_s": summary["raw_seconds"],
        "episode_adjusted_s": summary["adjusted_seconds"],
        "episode_tokens": summary["total_tokens"],
        "episode_solver_dev_s": summary["solver_device_seconds"],
        "grader_dev_s": adjudication["grading"]["grader_device_seconds"],
        "traincheck_uses": tools["traincheck"]["count"],
        "traincheck_first_s": tools["traincheck"]["first_at_seconds"],
        "blocked": tools["blocked"]["count"],
        "mentions": tools["mention"]["count"],
        "overhead_s": adjudication["overhead"]["overhead_seconds"],
        "agent_error": adjudication["agent_error"],
        **diagnosis_columns(adjudication),
    }


def summary_rows(batch: Batch) -> list[dict[str, Any]]:
    """Per case × arm × agent: rates over graded episodes and spreads over trials; ``ci_*``: 95 %
    percentile bootstrap intervals of the pass and solve rates, the first-valid adjusted time
    (over solved episodes) and the episode's adjusted time (over graded ones)."""
    keys = sorted({(e.case, e.arm, e.agent) for e in batch.plan.episodes}, key=_order(batch.plan))
    return [_summarize(batch, key) for key in keys]


def _order(plan: BatchPlan) -> Any:
    cases, arms, agents = list(plan.spec.cases), list(plan.spec.arms), list(plan.spec.agents)
    return lambda key: (cases.index(key[0]), arms.index(key[1]), agents.index(key[2]))


def _summarize(batch: Batch, key: tuple[str, str, str]) -> dict[str, Any]:
    rows = [r for r in batch.episodes if (r["case"], r["arm"], r["agent"]) == key]
    graded = [r for r in rows if r["graded"]]
    solved = [r for r in graded if r["solved"]]
    row: dict[str, Any] = {
        "case": key[0],
        "arm": key[1],
        "agent": key[2],
        "episodes": len(rows),
        "graded": len(graded),
        "gave_up": sum(1 for g in batch.gave_up if (g["case"], g["arm"], g["agent"]) == key),
        "pass_rate": _rate(r["final_pass"] for r in graded),
        "solve_rate": _rate(r["solved"] for r in graded),
        "traincheck_used": sum(1 for r in rows if r["traincheck_uses"]),
        "blocked": sum(r["blocked"] for r in rows),
        "solver_dev_s": sum(r["episode_solver_dev_s"] for r in rows),
        "grader_dev_s": sum(r["grader_dev_s"] for r in rows),
    }
    row["ci_pass_rate"] = _interval([float(bool(r["final_pass"])) for r in graded])
    for metric in FIRST_VALID_METRICS:
        row[metric] = asdict(Spread.of(r[metric] for r in solved))
    row["ci_first_valid_adjusted_s"] = _interval(_present(r["first_valid_adjusted_s"] for r in solved))
    row["ci_episode_adjusted_s"] = _interval(_present(r["episode_adjusted_s"] for r in graded))
    row["ci_solve_rate"] = _interval([float(bool(r["solved"])) for r in graded])
    for metric in ("episode_adjusted_s", "episode_tokens", "overhead_s"):
        row[metric] = asdict(Spread.of(r[metric] for r in rows))
    row["engagement"] = {level: sum(1 for r in rows if r["engagement_level"] == level) for level in ENGAGEMENT_LEVELS}
    row["traincheck_activated"] = sum(1 for r in rows if r["traincheck_activated"])
    for metric in ("validation_jobs", "validation_device_s", "validation_distinct_commands"):
        row[metric] = asdict(Spread.of(r[metric] for r in rows))
    return row


#: Rows of the milestone table, (milestone, measure), in display order: the time each milestone
#: was reached, then the cost up to the first valid submission.
MILESTONE_MEASURES: tuple[tuple[str, str], ...] = (
    *((milestone, measure) for milestone in MILESTONES for measure in ("raw_s", "adjusted_s")),
    ("first_valid_submission", "tokens_low"),
    ("first_valid_submission", "tokens_high"),
    ("first_valid_submission", "solver_dev_s"),
)
#: The treatment arm's episodes split by whether TrainCheck was activated (engagement rank ≥ 3).
ACTIVATED, NOT_ACTIVATED = f"{TREATMENT}_activated", f"{TREATMENT}_not_activated"


def milestone_rows(batch: Batch) -> list[dict[str, Any]]:
    """Per case × agent × milestone measure: one spread per arm (and the treatment arm split by
    TrainCheck activation) over the graded episodes that reached the milestone.

    Each arm's cell is a :class:`Spread` (``n`` reached it) plus ``of``: that arm's graded
    episodes that could time the milestone (a diagnosis, and a rubric for the rubric milestones);
    ``adjusted_s`` cells also carry ``ci_low``/``ci_high``, the 95 % bootstrap interval of the mean.
    """
    rows = []
    for case in batch.plan.spec.cases:
        for agent in batch.plan.spec.agents:
            graded = [r for r in batch.episodes if (r["case"], r["agent"]) == (case, agent) and r["graded"]]
            groups = _arm_groups(graded, batch.plan.spec.arms)
            for milestone, measure in MILESTONE_MEASURES:
                row: dict[str, Any] = {"case": case, "agent": agent, "milestone": milestone, "measure": measure,
                                       "judge": judge_label(graded)}  # fmt: skip
                for name, members in groups.items():
                    judged = [r for r in members if timed(r, milestone)]
                    values = [r[column(milestone, measure)] for r in judged]
                    row[name] = {**asdict(Spread.of(values)), "of": len(judged)}
                    if measure == "adjusted_s":  # the plotted measure also gets its interval
                        found = _interval(_present(values))
                        row[name].update(ci_low=found["low"], ci_high=found["high"])
                rows.append(row)
    return rows


def _arm_groups(rows: Sequence[Mapping[str, Any]], arms: Sequence[str]) -> dict[str, list[Mapping[str, Any]]]:
    """Episodes by arm; the treatment arm also split into TrainCheck activated and not."""
    groups = {arm: [r for r in rows if r["arm"] == arm] for arm in arms}
    if TREATMENT in groups:
        groups[ACTIVATED] = [r for r in groups[TREATMENT] if r["traincheck_activated"]]
        groups[NOT_ACTIVATED] = [r for r in groups[TREATMENT] if not r["traincheck_activated"]]
    return groups


def paired_rows(batch: Batch) -> list[dict[str, Any]]:
    """Per case × agent: control and treatment trials paired by trial number."""
    if not {CONTROL, TREATMENT} <= set(batch.plan.spec.arms):
        return []
    pairs = []
    for case in batch.plan.spec.cases:
        for agent in batch.plan.spec.agents:
            pairs.append(_pair(batch.episodes, case, agent))
    return pairs


def _pair(rows: Sequence[Mapping[str, Any]], case: str, agent: str) -> dict[str, Any]:
    def arm(name: str) -> dict[int, Mapping[str, Any]]:
        return {r["trial"]: r for r in rows if (r["case"], r["agent"], r["arm"]) == (case, agent, name) and r["graded"]}

    control, treatment = arm(CONTROL), arm(TREATMENT)
    trials = sorted(set(control) & set(treatment))
    both = [t for t in trials if control[t]["solved"] and treatment[t]["solved"]]
    control_rate = _rate(control[t]["final_pass"] for t in trials)
    treatment_rate = _rate(treatment[t]["final_pass"] for t in trials)
    only_treatment = sum(1 for t in trials if treatment[t]["final_pass"] and not control[t]["final_pass"])
    only_control = sum(1 for t in trials if control[t]["final_pass"] and not treatment[t]["final_pass"])
    row: dict[str, Any] = {
        "case": case,
        "agent": agent,
        "pairs": len(trials),
        "control_pass_rate": control_rate,
        "treatment_pass_rate": treatment_rate,
        "delta_pass_rate": _delta(treatment_rate, control_rate),
        "only_treatment_passed": only_treatment,
        "only_control_passed": only_control,
        "mcnemar_p": mcnemar_exact(only_treatment, only_control) if trials else None,
        "both_solved": len(both),
    }
    for metric in ("first_valid_adjusted_s", "first_valid_tokens", "first_valid_solver_dev_s"):
        differences = _differences(control, treatment, both, metric)
        row[f"delta_{metric}"] = asdict(Spread.of(differences))
        row[f"ci_delta_{metric}"] = _interval(differences)
    for milestone in MILESTONES:
        metric = column(milestone, "adjusted_s")
        differences = _differences(control, treatment, trials, metric)
        row[f"delta_{metric}"] = asdict(Spread.of(differences))
        row[f"ci_delta_{metric}"] = _interval(differences)
    row["treatment_used_traincheck"] = sum(1 for t in trials if treatment[t]["traincheck_uses"])
    row["treatment_activated_traincheck"] = sum(1 for t in trials if treatment[t]["traincheck_activated"])
    row["warning"] = small_n_warning(len(trials))
    return row


def _differences(
    control: Mapping[int, Mapping[str, Any]], treatment: Mapping[int, Mapping[str, Any]], trials: Sequence[int],
    metric: str,
) -> list[float]:  # fmt: skip
    """Treatment − control per trial, over the trials where both have the metric."""
    return [
        treatment[t][metric] - control[t][metric]
        for t in trials
        if treatment[t][metric] is not None and control[t][metric] is not None
    ]


def _interval(differences: Sequence[float]) -> dict[str, float | None]:
    """The 95 % bootstrap interval of the mean (of paired differences, or of one group's values) as
    ``{"low", "high"}`` (``None`` for none)."""
    found = bootstrap_ci(differences)
    return {"low": found[0], "high": found[1]} if found else {"low": None, "high": None}


def _present(values: Iterable[float | None]) -> list[float]:
    return [v for v in values if v is not None]


def _rate(flags: Iterable[bool]) -> float | None:
    values = [bool(f) for f in flags]
    return sum(values) / len(values) if values else None


def _delta(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None else a - b


def totals(batch: Batch) -> dict[str, Any]:
    """Batch-wide figures: episodes, solver and grader device-seconds and their ratio."""
    solver = sum(r["episode_solver_dev_s"] for r in batch.episodes)
    grading = batch.grading
    grader = float(grading.get("grader_device_seconds", 0.0))
    without = float(grading.get("grader_device_seconds_without_dedup", 0.0))
    return {
        "episodes": len(batch.episodes),
        "gave_up": len(batch.gave_up),
        "ungraded": sum(1 for r in batch.episodes if not r["graded"]),
        "revisions": grading.get("revisions"),
        "unique_trees": grading.get("unique_trees"),
        "solver_device_seconds": solver,
        "grader_device_seconds": grader,
        "grader_device_seconds_without_dedup": without,
        "grader_solver_ratio": grader / solver if solver else None,
        "grader_solver_ratio_without_dedup": without / solver if solver else None,
    }
