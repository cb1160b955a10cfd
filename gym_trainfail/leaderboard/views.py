"""The leaderboard's tables as headers and text cells, shared by the Markdown and HTML pages."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from gym_trainfail.leaderboard import fmt


@dataclass(frozen=True)
class View:
    """A titled table of text cells."""

    title: str
    note: str
    headers: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]


def summary_view(rows: Sequence[Mapping[str, Any]]) -> View:
    """Per case × arm × agent."""
    headers = ("case", "arm", "agent", "episodes", "pass rate", "solved", "first valid: raw s", "adjusted s",
               "tokens", "solver device-s", "TrainCheck used", "grader device-s (per episode)")  # fmt: skip
    cells = tuple(
        (
            fmt.short_case(r["case"]),
            r["arm"],
            r["agent"],
            f"{r['episodes']}" + (f" (+{r['gave_up']} gave up)" if r["gave_up"] else ""),
            fmt.rate(r["pass_rate"], r["graded"]),
            fmt.rate(r["solve_rate"], r["graded"]),
            fmt.spread(r["first_valid_raw_s"]),
            fmt.spread(r["first_valid_adjusted_s"]),
            fmt.spread(r["first_valid_tokens"], 0),
            fmt.spread(r["first_valid_solver_dev_s"]),
            f"{r['traincheck_used']} of {r['episodes']}" if r["arm"] == "traincheck" else f"blocked {r['blocked']}×",
            fmt.number(r["grader_dev_s"]),
        )
        for r in rows
    )
    note = (
        "Pass rate: the final revision passes every private scenario. Solved: some revision does (the first "
        "valid repair). First-valid columns are the cost up to that revision's submission, over solved "
        "episodes: mean ± sd [min–max] across trials. Adjusted time = raw − device-queue waits − suspensions. "
        "Grader device-seconds per episode count each of its distinct trees in full (the batch grades a tree "
        "once; see the totals above)."
    )
    return View("Per case × arm × agent", note, headers, cells)


def paired_view(rows: Sequence[Mapping[str, Any]]) -> View:
    """Control vs treatment, paired by trial."""
    headers = ("case", "agent", "pairs", "control pass", "TrainCheck pass", "Δ pass", "only TrainCheck passed",
               "only control passed", "Δ first-valid adjusted s", "Δ tokens", "Δ solver device-s",
               "used TrainCheck")  # fmt: skip
    cells = tuple(
        (
            fmt.short_case(r["case"]),
            r["agent"],
            str(r["pairs"]),
            fmt.rate(r["control_pass_rate"], r["pairs"]),
            fmt.rate(r["treatment_pass_rate"], r["pairs"]),
            fmt.signed(r["delta_pass_rate"], percent=True),
            str(r["only_treatment_passed"]),
            str(r["only_control_passed"]),
            fmt.spread(r["delta_first_valid_adjusted_s"]),
            fmt.spread(r["delta_first_valid_tokens"], 0),
            fmt.spread(r["delta_first_valid_solver_dev_s"]),
            f"{r['treatment_used_traincheck']} of {r['pairs']}",
        )
        for r in rows
    )
    note = "Trial k of the control arm paired with trial k of the TrainCheck arm; Δ = TrainCheck − control."
    return View("Paired comparison: control vs. TrainCheck", note, headers, cells)


def episodes_view(rows: Sequence[Mapping[str, Any]]) -> View:
    """Every episode."""
    headers = ("episode", "attempts", "revisions", "final", "first valid", "raw s", "adjusted s", "tokens",
               "solver device-s", "grader device-s", "overhead s")  # fmt: skip
    cells = tuple(
        (
            r["episode"],
            str(r["attempts"]),
            str(r["revisions"]),
            r["final_status"],
            f"rev {r['first_valid_revision']}" if r["first_valid_revision"] else "none",
            fmt.number(r["first_valid_raw_s"]),
            fmt.number(r["first_valid_adjusted_s"]),
            fmt.number(r["first_valid_tokens"], 0),
            fmt.number(r["first_valid_solver_dev_s"]),
            fmt.number(r["grader_dev_s"]),
            fmt.number(r["overhead_s"]),
        )
        for r in rows
    )
    return View("Episodes", "Costs are up to the first valid revision.", headers, cells)


def totals_lines(totals: Mapping[str, Any]) -> list[str]:
    """Batch-wide figures, one sentence each."""
    ratio = fmt.number(totals["grader_solver_ratio"], 2)
    before = fmt.number(totals["grader_solver_ratio_without_dedup"], 2)
    return [
        f"{totals['episodes']} episodes adjudicated, {totals['gave_up']} gave up after infrastructure failures "
        f"(left out of every rate), {totals['ungraded']} with incomplete grading.",
        f"{totals['revisions']} submitted revisions, {totals['unique_trees']} distinct trees graded "
        "(deduplicated by tree hash across the batch).",
        f"Solver device-seconds: {fmt.number(totals['solver_device_seconds'])}; grader device-seconds: "
        f"{fmt.number(totals['grader_device_seconds'])} "
        f"({fmt.number(totals['grader_device_seconds_without_dedup'])} if every revision were graded separately).",
        f"Grader/solver device-second ratio: {ratio} ({before} without deduplication).",
    ]
