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
    """``12.3 ± 1.2 [11.1–13.4]`` (mean ± sd [min–max]); one value alone; ``—`` for none."""
    if not data or not data.get("n"):
        return "—"
    mean = number(data["mean"], digits)
    if data["n"] == 1:
        return mean
    low, high = number(data["min"], digits), number(data["max"], digits)
    return f"{mean} ± {number(data['sd'], digits)} [{low}–{high}]"


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
