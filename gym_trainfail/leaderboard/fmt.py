"""How leaderboard numbers are written in tables (Markdown and HTML share these)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def rate(value: float | None, of: int) -> str:
    """``50% of 2`` (``—`` when nothing was graded)."""
    return "—" if value is None else f"{value * 100:.0f}% of {of}"


def number(value: float | None, digits: int = 1) -> str:
    """A plain number, ``—`` when missing; integers stay integers."""
    if value is None:
        return "—"
    if float(value).is_integer() and abs(value) >= 10:
        return f"{value:.0f}"
    return f"{value:.{digits}f}"


def spread(data: Mapping[str, Any], digits: int = 1) -> str:
    """``12.3 ± 1.2 [11.1–13.4]`` (mean ± sd [min–max]; ``[-6.5 to -1.9]`` when negative); one value
    alone; ``—`` for none."""
    if not data or not data.get("n"):
        return "—"
    mean = number(data["mean"], digits)
    if data["n"] == 1:
        return mean
    low, high = number(data["min"], digits), number(data["max"], digits)
    joint = " to " if data["min"] < 0 else "–"  # "[-6.5 to -1.9]", never "[-6.5–-1.9]"
    return f"{mean} ± {number(data['sd'], digits)} [{low}{joint}{high}]"


def signed(value: float | None, digits: int = 1, percent: bool = False) -> str:
    """``+12.0`` / ``−3.5`` / ``+50 pp``."""
    if value is None:
        return "—"
    scaled = value * 100 if percent else value
    text = f"{abs(scaled):.{0 if percent else digits}f}"
    sign = "+" if scaled >= 0 else "−"
    return f"{sign}{text}{' pp' if percent else ''}"


def short_case(case_id: str) -> str:
    """``TrainFail/DDPTokenAverage-v0`` → ``DDPTokenAverage-v0``."""
    return case_id.split("/")[-1]


def interval(data: Mapping[str, Any] | None, digits: int = 1) -> str:
    """``[-6.0, 2.0]`` (a confidence interval, written like :func:`spread`), ``—`` when missing."""
    if not data or data.get("low") is None or data.get("high") is None:
        return "—"
    return f"[{number(data['low'], digits)}, {number(data['high'], digits)}]"


def pvalue(value: float | None) -> str:
    """``0.0625`` (three significant digits), ``<0.001`` below that, ``—`` when missing."""
    if value is None:
        return "—"
    return "<0.001" if value < 0.001 else f"{value:.3g}"


def reached(data: Mapping[str, Any], digits: int = 1) -> str:
    """A milestone cell: ``12.3 ± 1.2 [11.1–13.4] (2/3 reached)``; ``—`` without judged episodes."""
    if not data.get("of"):
        return "—"
    return f"{spread(data, digits)} ({data['n']}/{data['of']} reached)"


def token_range(low: Mapping[str, Any], high: Mapping[str, Any]) -> str:
    """Token counts known only as a range: one spread when the bounds agree, ``1200–1350`` for one
    episode, else ``low … ; high …`` spreads; with ``(n/N reached)`` like :func:`reached`."""
    if not low.get("of"):
        return "—"
    if not low.get("n") or low == high:
        return reached(low, 0)
    if low["n"] == 1:
        text = f"{number(low['mean'], 0)}–{number(high['mean'], 0)}"
    else:
        text = f"low {spread(low, 0)}; high {spread(high, 0)}"
    return f"{text} ({low['n']}/{low['of']} reached)"


def share_interval(value: float | None, interval: Mapping[str, Any] | None) -> str:
    """``50% [0–100]`` (a share and its interval, in percent), ``100%`` when the interval is a point."""
    if value is None:
        return "—"
    low, high = (interval or {}).get("low"), (interval or {}).get("high")
    if low is None or high is None or low == high:
        return f"{value * 100:.0f}%"
    return f"{value * 100:.0f}% [{low * 100:.0f}–{high * 100:.0f}]"


def mean_interval(value: float | None, interval: Mapping[str, Any] | None, digits: int = 1) -> str:
    """``46.4 [39.2–53.6]`` (a mean and its interval), the mean alone without one."""
    if value is None:
        return "—"
    low, high = (interval or {}).get("low"), (interval or {}).get("high")
    if low is None or high is None:
        return number(value, digits)
    joint = " to " if low < 0 else "–"
    return f"{number(value, digits)} [{number(low, digits)}{joint}{number(high, digits)}]"
