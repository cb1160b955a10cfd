"""The leaderboard's tables as headers and text cells, shared by the Markdown and HTML pages."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from gym_trainfail.leaderboard import fmt
from gym_trainfail.leaderboard.milestone_columns import ENGAGEMENT_LEVELS, MILESTONE_LABELS, MILESTONES
from gym_trainfail.leaderboard.stats import SMALL_N
from gym_trainfail.leaderboard.table import ACTIVATED, NOT_ACTIVATED


@dataclass(frozen=True)
class Cell:
    """A table cell with more than text: the number it sorts by, and a warning shown beside it."""

    text: str
    sort: float | None = None
    warning: str | None = None

    def __str__(self) -> str:
        return self.text


@dataclass(frozen=True)
class View:
    """A titled table of text cells; footnotes (warnings) are shown under it."""

    title: str
    note: str
    headers: tuple[str, ...]
    rows: tuple[tuple[str | Cell, ...], ...]
    footnotes: tuple[str, ...] = ()


#: What the compact table's warning mark means.
SMALL_N_NOTE = f"⚠ small n: fewer than {SMALL_N} episodes behind the number it follows, so its interval says little"


def compact_view(rows: Sequence[Mapping[str, Any]]) -> View:
    """Per case × arm × agent, the columns a reader compares: episodes, pass rate and first-valid
    cost with their 95 % bootstrap intervals, TrainCheck engagement; small samples marked."""
    headers = ("case", "arm", "agent", "n", "pass rate [95% CI]", "first valid: adjusted s [95% CI]", "tokens",
               "solver device-s", "TrainCheck engagement")  # fmt: skip
    cells = tuple(
        (
            fmt.short_case(r["case"]),
            r["arm"],
            r["agent"],
            Cell(str(r["graded"]) + (f" (+{r['gave_up']} gave up)" if r["gave_up"] else ""), r["graded"]),
            Cell(fmt.share_interval(r["pass_rate"], r.get("ci_pass_rate")), r["pass_rate"], _small(r["graded"])),
            _first_valid(r),
            Cell(fmt.number(r["first_valid_tokens"]["mean"], 0), r["first_valid_tokens"]["mean"]),
            Cell(fmt.number(r["first_valid_solver_dev_s"]["mean"]), r["first_valid_solver_dev_s"]["mean"]),
            _engagement_cell(r),
        )
        for r in rows
    )
    note = (
        "n: graded episodes (pass rates are over them). First-valid columns are the cost up to the first "
        "revision that passes every private scenario, mean over the episodes that reached one. Intervals: "
        "95% percentile bootstrap of the mean (10,000 resamples). Click a column's header to sort by it. "
        "Every column is in the full table below."
    )
    flagged = any(isinstance(c, Cell) and c.warning for row in cells for c in row)
    return View("Per case × arm × agent", note, headers, cells, (SMALL_N_NOTE,) if flagged else ())


def _small(n: int) -> str | None:
    """The warning beside a number computed from ``n`` (1 ≤ n < SMALL_N) episodes."""
    return f"only {n} episode(s) behind it, fewer than {SMALL_N}" if 0 < n < SMALL_N else None


def _first_valid(r: Mapping[str, Any]) -> Cell:
    spread = r["first_valid_adjusted_s"]
    text = (
        fmt.number(spread["mean"])
        if spread["n"] < 2
        else fmt.mean_interval(spread["mean"], r.get("ci_first_valid_adjusted_s"))
    )
    return Cell(text, spread["mean"], _small(spread["n"]))


def _engagement_cell(r: Mapping[str, Any]) -> Cell:
    counts = r["engagement"]
    judged = sum(counts.values())
    rank = sum(ENGAGEMENT_LEVELS.index(level) * n for level, n in counts.items()) / judged if judged else None
    return Cell(_engagement(counts), rank)


def summary_view(rows: Sequence[Mapping[str, Any]]) -> View:
    """Per case × arm × agent."""
    headers = ("case", "arm", "agent", "episodes", "pass rate", "solved", "first valid: raw s", "adjusted s",
               "tokens", "solver device-s", "TrainCheck used", "grader device-s (per episode)", "engagement",
               "validation jobs", "validation device-s", "distinct validation commands")  # fmt: skip
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
            _engagement(r["engagement"]),
            fmt.spread(r["validation_jobs"]),
            fmt.spread(r["validation_device_s"]),
            fmt.spread(r["validation_distinct_commands"]),
        )
        for r in rows
    )
    note = (
        "Pass rate: the final revision passes every private scenario. Solved: some revision does (the first "
        "valid repair). First-valid columns are the cost up to that revision's submission, over solved "
        "episodes: mean ± sd [min–max] across trials. Adjusted time = raw − device-queue waits − suspensions. "
        "Grader device-seconds per episode count each of its distinct trees in full (the batch grades a tree "
        "once; see the totals above). Engagement: episodes per level of TrainCheck engagement judged by "
        "the rubric (none, manual, prepared, activated, acted; TrainCheck arm only). Validation: the agent's "
        "device jobs, their device-seconds and distinct commands, mean ± sd [min–max] across trials."
    )
    return View("Per case × arm × agent", note, headers, cells)


def _engagement(counts: Mapping[str, int]) -> str:
    """``none 1 · acted 2``: episodes per engagement level, ``—`` when none was judged."""
    found = [f"{level} {counts[level]}" for level in ENGAGEMENT_LEVELS if counts.get(level)]
    return " · ".join(found) or "—"


#: Milestone-table keys that are not arm groups.
_MILESTONE_KEYS = ("case", "agent", "milestone", "measure", "judge")
_GROUP_LABELS = {ACTIVATED: "traincheck (activated)", NOT_ACTIVATED: "traincheck (not activated)"}
_MEASURE_LABELS = {"raw_s": "raw s", "adjusted_s": "adjusted s", "solver_dev_s": "solver device-s"}


def milestone_views(rows: Sequence[Mapping[str, Any]]) -> list[View]:
    """One milestone table per case × agent: rows are milestones and costs, columns arm groups."""
    keys = list(dict.fromkeys((r["case"], r["agent"]) for r in rows))
    return [_milestone_view([r for r in rows if (r["case"], r["agent"]) == key]) for key in keys]


def _milestone_view(rows: Sequence[Mapping[str, Any]]) -> View:
    groups = [k for k in rows[0] if k not in _MILESTONE_KEYS]
    cells = []
    for r in rows:
        if r["measure"] == "tokens_high":
            continue
        if r["measure"] == "tokens_low":
            high = next(h for h in rows if (h["milestone"], h["measure"]) == (r["milestone"], "tokens_high"))
            line = [fmt.token_range(r[g], high[g]) for g in groups]
            measure = "tokens"
        else:
            line = [fmt.reached(r[g]) for g in groups]
            measure = _MEASURE_LABELS[r["measure"]]
        cost = r["measure"] not in ("raw_s", "adjusted_s")
        label = f"through {MILESTONE_LABELS[r['milestone']]}" if cost else MILESTONE_LABELS[r["milestone"]]
        cells.append((label, measure, *line))
    note = (
        f"Judge: {rows[0].get('judge', 'rubric')}. A rubric judge's times are upper bounds: a correct statement it "
        "misses delays the milestone. "
        "Seconds from the episode's start to each milestone the judge found, and the cost through the "
        "first valid submission: mean ± sd [min–max] over the graded episodes that reached it (n/N reached; N: "
        "graded episodes with a diagnosis, and a rubric for the three diagnosis milestones). Tokens are a range "
        "from completed-turn counters (never interpolated). The TrainCheck arm is also split by whether "
        "TrainCheck was activated (the rubric's engagement level activated or acted)."
    )
    title = f"Milestones: {fmt.short_case(rows[0]['case'])} · {rows[0]['agent']}"
    return View(title, note, ("milestone", "measure", *(_GROUP_LABELS.get(g, g) for g in groups)), tuple(cells))


def paired_view(rows: Sequence[Mapping[str, Any]]) -> View:
    """Control vs treatment, paired by trial, with bootstrap intervals, McNemar p and small-n warnings."""
    headers = ("case", "agent", "pairs", "control pass", "TrainCheck pass", "Δ pass", "only TrainCheck passed",
               "only control passed", "McNemar p", "Δ first-valid adjusted s", "Δ adjusted s [95% CI]", "Δ tokens",
               "Δ tokens [95% CI]", "Δ solver device-s", "Δ solver device-s [95% CI]", "used TrainCheck",
               "activated TrainCheck", "warning")  # fmt: skip
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
            fmt.pvalue(r["mcnemar_p"]),
            fmt.spread(r["delta_first_valid_adjusted_s"]),
            fmt.interval(r["ci_delta_first_valid_adjusted_s"]),
            fmt.spread(r["delta_first_valid_tokens"], 0),
            fmt.interval(r["ci_delta_first_valid_tokens"], 0),
            fmt.spread(r["delta_first_valid_solver_dev_s"]),
            fmt.interval(r["ci_delta_first_valid_solver_dev_s"]),
            f"{r['treatment_used_traincheck']} of {r['pairs']}",
            f"{r['treatment_activated_traincheck']} of {r['pairs']}",
            f"too few pairs ({r['pairs']} < {SMALL_N})" if r["warning"] else "",
        )
        for r in rows
    )
    note = (
        "Trial k of the control arm paired with trial k of the TrainCheck arm; Δ = TrainCheck − control. "
        "McNemar p: exact two-sided test of the pass-rate difference on the discordant pairs. Intervals: "
        "95% percentile bootstrap of the mean paired difference (10,000 resamples), over pairs where both "
        "trials solved the case. Activated: the rubric judged TrainCheck activated (or acted on)."
    )
    named: dict[str, list[str]] = {}  # one line per warning, naming every comparison it concerns
    for r in rows:
        if r["warning"]:
            named.setdefault(r["warning"], []).append(f"{fmt.short_case(r['case'])} · {r['agent']}")
    warnings = tuple(f"{', '.join(names)}: {warning}" for warning, names in named.items())
    return View("Paired comparison: control vs. TrainCheck", note, headers, cells, warnings)


def paired_milestones_view(rows: Sequence[Mapping[str, Any]]) -> View:
    """Paired differences in the adjusted time each milestone was reached."""
    headers = ("case", "agent", "milestone", "pairs reaching it in both arms", "Δ adjusted s",
               "Δ adjusted s [95% CI]")  # fmt: skip
    cells = tuple(
        (
            fmt.short_case(r["case"]),
            r["agent"],
            MILESTONE_LABELS[milestone],
            str(r[f"delta_m_{milestone}_adjusted_s"]["n"]),
            fmt.spread(r[f"delta_m_{milestone}_adjusted_s"]),
            fmt.interval(r[f"ci_delta_m_{milestone}_adjusted_s"]),
        )
        for r in rows
        for milestone in MILESTONES
    )
    note = (
        "Δ = TrainCheck − control adjusted seconds to each rubric milestone, over the trial pairs where both "
        "reached it; intervals are 95% percentile bootstraps of the mean difference."
    )
    return View("Paired milestones: control vs. TrainCheck", note, headers, cells)


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
        "(deduplicated by tree hash across the batch)."
        if totals["revisions"] is not None
        else "No grading report: revisions and distinct trees graded are unknown.",
        f"Solver device-seconds: {fmt.number(totals['solver_device_seconds'])}; grader device-seconds: "
        f"{fmt.number(totals['grader_device_seconds'])} "
        f"({fmt.number(totals['grader_device_seconds_without_dedup'])} if every revision were graded separately).",
        f"Grader/solver device-second ratio: {ratio} ({before} without deduplication).",
    ]
