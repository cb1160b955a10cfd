"""What the leaderboard's figures show, computed from its tables (no drawing here: see
:mod:`~gym_trainfail.leaderboard.figures`): pass rate and first-valid adjusted time per case ×
arm × agent, cost against success with its Pareto front, the adjusted time to each milestone per
case, and the TrainCheck arm split by whether TrainCheck was activated. Every value is a mean
with its 95 % percentile bootstrap interval (:mod:`~gym_trainfail.leaderboard.stats`).
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from gym_trainfail.leaderboard import fmt
from gym_trainfail.leaderboard.milestone_columns import MILESTONE_LABELS, MILESTONES
from gym_trainfail.leaderboard.stats import bootstrap_ci
from gym_trainfail.leaderboard.table import ACTIVATED, CONTROL, NOT_ACTIVATED


@dataclass(frozen=True)
class Bar:
    """One bar: a mean and its interval; ``value`` ``None`` when no episode has the measure."""

    value: float | None
    low: float | None = None
    high: float | None = None


@dataclass(frozen=True)
class Series:
    """One agent's episodes in one group (an arm, or the TrainCheck arm's split): a bar per category."""

    agent: str
    group: str
    bars: tuple[Bar, ...]


@dataclass(frozen=True)
class Panel:
    """One small multiple: a title (may be empty), its categories and the series drawn over them."""

    title: str
    categories: tuple[str, ...]
    series: tuple[Series, ...]


@dataclass(frozen=True)
class BarChart:
    """Horizontal grouped bars with intervals, in one or more panels sharing a value axis label."""

    name: str
    axis: str
    panels: tuple[Panel, ...]
    missing: str
    share: bool = False  # values are shares (0–1), drawn as percentages on a 0–100 % axis


@dataclass(frozen=True)
class Point:
    """One agent × arm on the cost-success plane: means and their intervals over its episodes."""

    agent: str
    arm: str
    x: float
    y: float
    x_low: float
    x_high: float
    y_low: float
    y_high: float
    n: int


def _bar(value: float | None, interval: Mapping[str, Any] | None) -> Bar:
    if value is None:
        return Bar(None)
    interval = interval or {}
    return Bar(value, interval.get("low"), interval.get("high"))


def _summary_chart(
    name: str, axis: str, missing: str, rows: Sequence[Mapping[str, Any]], cases: Sequence[str], value: Any,
    *, share: bool = False,
) -> BarChart:  # fmt: skip
    present = {(r["agent"], r["arm"]) for r in rows}
    agents, arms = dict.fromkeys(r["agent"] for r in rows), dict.fromkeys(r["arm"] for r in rows)
    keys = [(agent, arm) for agent in agents for arm in arms if (agent, arm) in present]  # arms side by side
    series = []
    for agent, arm in keys:
        by_case = {r["case"]: r for r in rows if (r["agent"], r["arm"]) == (agent, arm)}
        series.append(Series(agent, arm, tuple(value(by_case[c]) if c in by_case else Bar(None) for c in cases)))
    panel = Panel("", tuple(fmt.short_case(c) for c in cases), tuple(series))
    return BarChart(name, axis, (panel,), missing, share)


def pass_rate_chart(rows: Sequence[Mapping[str, Any]], cases: Sequence[str]) -> BarChart:
    """Pass rate (final revision) per case, one bar per agent × arm (from :func:`~.table.summary_rows`)."""
    return _summary_chart(
        "pass-rate", "pass rate of the final revision (mean, 95% bootstrap CI)", "no graded episode",
        rows, cases, lambda r: _bar(r["pass_rate"], r.get("ci_pass_rate")), share=True,
    )  # fmt: skip


def first_valid_chart(rows: Sequence[Mapping[str, Any]], cases: Sequence[str]) -> BarChart:
    """Adjusted seconds to the first valid revision per case, over solved episodes."""
    return _summary_chart(
        "first-valid-time", "adjusted seconds to the first valid revision (mean, 95% bootstrap CI)", "none solved",
        rows, cases, lambda r: _bar(r["first_valid_adjusted_s"]["mean"], r.get("ci_first_valid_adjusted_s")),
    )  # fmt: skip


def _milestone_bar(cell: Mapping[str, Any] | None) -> Bar:
    if not cell or not cell["n"]:
        return Bar(None)
    return Bar(cell["mean"], cell.get("ci_low"), cell.get("ci_high"))


def _milestone_panels(
    rows: Sequence[Mapping[str, Any]], cases: Sequence[str], keys: Sequence[tuple[str, str]]
) -> tuple[Panel, ...]:
    panels = []
    for case in cases:
        adjusted = {(r["agent"], r["milestone"]): r for r in rows if r["case"] == case and r["measure"] == "adjusted_s"}
        series = tuple(
            Series(agent, group, tuple(_milestone_bar((adjusted.get((agent, m)) or {}).get(group)) for m in MILESTONES))
            for agent, group in keys
        )
        panels.append(Panel(fmt.short_case(case), tuple(MILESTONE_LABELS[m] for m in MILESTONES), series))
    return tuple(panels)


def milestone_chart(
    rows: Sequence[Mapping[str, Any]], cases: Sequence[str], agents: Sequence[str], arms: Sequence[str]
) -> BarChart:
    """Small multiples, one panel per case: adjusted seconds to each milestone, one bar per agent
    × arm (from :func:`~.table.milestone_rows`)."""
    keys = [(agent, arm) for agent in agents for arm in arms]
    return BarChart(
        "milestones", "adjusted seconds to the milestone (mean, 95% bootstrap CI)",
        _milestone_panels(rows, cases, keys), "not reached",
    )  # fmt: skip


def activated_agents(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    """Agents with at least one graded TrainCheck-arm episode that activated TrainCheck, in order."""
    return list(dict.fromkeys(r["agent"] for r in rows if (r.get(ACTIVATED) or {}).get("of")))


def activated_chart(rows: Sequence[Mapping[str, Any]], cases: Sequence[str]) -> BarChart | None:
    """The milestone panels for the agents that activated TrainCheck somewhere: control against the
    TrainCheck arm split into episodes that activated it and those that did not; ``None`` when no
    episode activated TrainCheck (the split does not exist)."""
    agents = activated_agents(rows)
    if not agents:
        return None
    keys = [(agent, group) for agent in agents for group in (CONTROL, ACTIVATED, NOT_ACTIVATED)]
    return BarChart(
        "traincheck-activated", "adjusted seconds to the milestone (mean, 95% bootstrap CI)",
        _milestone_panels(rows, cases, keys), "not reached",
    )  # fmt: skip


def cost_points(episodes: Sequence[Mapping[str, Any]]) -> list[Point]:
    """Per agent × arm over its graded episodes (every case): mean adjusted seconds per episode
    against the share solved, each with its bootstrap interval."""
    points = []
    for agent, arm in dict.fromkeys((r["agent"], r["arm"]) for r in episodes):
        rows = [r for r in episodes if (r["agent"], r["arm"]) == (agent, arm) and r["graded"]]
        if not rows:
            continue
        costs = [float(r["episode_adjusted_s"]) for r in rows]
        solved = [float(bool(r["solved"])) for r in rows]
        (x_low, x_high), (y_low, y_high) = bootstrap_ci(costs) or (0.0, 0.0), bootstrap_ci(solved) or (0.0, 0.0)
        points.append(Point(agent, arm, statistics.fmean(costs), statistics.fmean(solved), x_low, x_high, y_low,
                            y_high, len(rows)))  # fmt: skip
    return points


def pareto_front(points: Sequence[Point]) -> list[Point]:
    """Points no other point beats on both axes (lower cost ``x``, higher success ``y``), by cost."""
    front = [
        p for p in points
        if not any((q.x <= p.x and q.y >= p.y) and (q.x < p.x or q.y > p.y) for q in points)
    ]  # fmt: skip
    return sorted(front, key=lambda p: (p.x, -p.y))
