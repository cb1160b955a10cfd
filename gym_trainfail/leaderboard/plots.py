"""The leaderboard's plots: pass rate and first-valid time per case × arm, cost against success,
and the time to each rubric milestone per arm."""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from typing import Any

from gym_trainfail.leaderboard import fmt
from gym_trainfail.leaderboard.milestone_columns import MILESTONE_LABELS, MILESTONES
from gym_trainfail.leaderboard.svg import Bar, Point, Series, bar_chart, scatter


def _series(rows: Sequence[Mapping[str, Any]], cases: Sequence[str], value: Any) -> list[Series]:
    keys = list(dict.fromkeys((r["arm"], r["agent"]) for r in rows))
    series = []
    for arm, agent in keys:
        by_case = {r["case"]: r for r in rows if (r["arm"], r["agent"]) == (arm, agent)}
        bars = tuple(value(by_case[c]) if c in by_case else Bar(None) for c in cases)
        series.append(Series(f"{agent} · {arm}", bars))
    return series


def pass_rate_plot(rows: Sequence[Mapping[str, Any]], cases: Sequence[str]) -> str:
    """Pass rate per case, one bar per agent × arm."""
    series = _series(rows, cases, lambda r: Bar(r["pass_rate"]))
    return bar_chart("Pass rate (final revision)", "share of trials", [fmt.short_case(c) for c in cases], series, 1.0)


def first_valid_plot(rows: Sequence[Mapping[str, Any]], cases: Sequence[str]) -> str:
    """Adjusted seconds to the first valid revision: mean, whiskers min–max across trials."""

    def bar(r: Mapping[str, Any]) -> Bar:
        s = r["first_valid_adjusted_s"]
        return Bar(s["mean"], s["min"], s["max"]) if s["n"] else Bar(None)

    series = _series(rows, cases, bar)
    title = "Adjusted time to the first valid revision (mean, min–max)"
    return bar_chart(title, "seconds", [fmt.short_case(c) for c in cases], series)


def pareto_plot(episodes: Sequence[Mapping[str, Any]]) -> str:
    """Mean episode cost (adjusted seconds) against share of episodes solved, per agent × arm."""
    keys = list(dict.fromkeys((r["agent"], r["arm"]) for r in episodes))
    points = []
    for agent, arm in keys:
        rows = [r for r in episodes if (r["agent"], r["arm"]) == (agent, arm) and r["graded"]]
        if not rows:
            continue
        cost = statistics.fmean(r["episode_adjusted_s"] for r in rows)
        success = sum(r["solved"] for r in rows) / len(rows)
        points.append(Point(f"{agent} · {arm}", cost, success, arm))
    return scatter("Cost vs. success (Pareto front joined)", "mean adjusted seconds per episode",
                   "share solved", points)  # fmt: skip


def milestone_plot(rows: Sequence[Mapping[str, Any]], case: str, arms: Sequence[str]) -> str:
    """One case's adjusted seconds to each milestone (from :func:`~.table.milestone_rows`): groups
    are milestones, one bar per agent × arm, mean with whiskers min–max."""
    adjusted = [r for r in rows if r["case"] == case and r["measure"] == "adjusted_s"]
    series = []
    for agent in dict.fromkeys(r["agent"] for r in adjusted):
        by_milestone = {r["milestone"]: r for r in adjusted if r["agent"] == agent}
        for arm in arms:
            cells = [by_milestone.get(m, {}).get(arm) for m in MILESTONES]
            bars = tuple(Bar(c["mean"], c["min"], c["max"]) if c and c["n"] else Bar(None) for c in cells)
            series.append(Series(f"{agent} · {arm}", bars))
    title = f"{fmt.short_case(case)}: adjusted time to each milestone (mean, min–max)"
    return bar_chart(title, "seconds", [MILESTONE_LABELS[m] for m in MILESTONES], series)
