"""Small inline-SVG charts (no plotting dependency): grouped bars with whiskers, a scatter
with its Pareto front. Output is deterministic text, so rendered pages diff cleanly."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from html import escape

WIDTH, HEIGHT = 720, 320
LEFT, RIGHT, TOP, BOTTOM = 64, 16, 28, 72
CHAR_W = 6  # approximate width of one character at font size 11
PALETTE = ("#4269d0", "#efb118", "#ff725c", "#6cc5b0", "#3ca951", "#ff8ab7", "#a463f2", "#97bbf5")


@dataclass(frozen=True)
class Bar:
    """One bar: its value and optional whisker (low, high)."""

    value: float | None
    low: float | None = None
    high: float | None = None


@dataclass(frozen=True)
class Series:
    """Bars of one series, one per group, drawn in one colour."""

    label: str
    bars: tuple[Bar, ...]


@dataclass(frozen=True)
class Point:
    """A labelled point of a scatter plot."""

    label: str
    x: float
    y: float
    series: str


def _fmt(value: float) -> str:
    return f"{value:.3g}"


def _frame(title: str, y_label: str, y_max: float, body: list[str], ticks: int = 5) -> str:
    plot_h = HEIGHT - TOP - BOTTOM
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {HEIGHT}" width="{WIDTH}" height="{HEIGHT}" '
        f'role="img" aria-label="{escape(title)}" font-family="sans-serif" font-size="11">',
        f"<title>{escape(title)}</title>",
        f'<text x="{WIDTH / 2}" y="16" text-anchor="middle" font-size="13" font-weight="bold">{escape(title)}</text>',
        f'<text x="14" y="{TOP + plot_h / 2}" transform="rotate(-90 14 {TOP + plot_h / 2})" '
        f'text-anchor="middle">{escape(y_label)}</text>',
    ]
    for i in range(ticks + 1):
        value = y_max * i / ticks
        y = TOP + plot_h - plot_h * i / ticks
        parts.append(f'<line x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{y:.1f}" y2="{y:.1f}" stroke="#e5e5e5"/>')
        parts.append(f'<text x="{LEFT - 6}" y="{y + 4:.1f}" text-anchor="end">{_fmt(value)}</text>')
    parts.extend(body)
    parts.append("</svg>")
    return "\n".join(parts)


def _nice_max(values: Sequence[float]) -> float:
    """A round axis maximum at or above every value."""
    top = max([v for v in values if v > 0], default=1.0)
    magnitude = 10.0 ** math.floor(math.log10(top))
    return next(step * magnitude for step in (1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10) if step * magnitude >= top)


def bar_chart(
    title: str, y_label: str, groups: Sequence[str], series: Sequence[Series], y_max: float | None = None
) -> str:
    """Grouped bars (one group per label, one bar per series), whiskers where given."""
    values = [v for s in series for b in s.bars for v in (b.value, b.high) if v is not None]
    top = y_max if y_max is not None else _nice_max(values)
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    group_w = plot_w / max(1, len(groups))
    bar_w = group_w * 0.8 / max(1, len(series))
    body: list[str] = []
    for g, group in enumerate(groups):
        x0 = LEFT + g * group_w + group_w * 0.1
        body.append(_group_label(group, x0 + group_w * 0.4, TOP + plot_h + 16, group_w))
        for s, item in enumerate(series):
            bar = item.bars[g]
            x = x0 + s * bar_w
            body.extend(_bar(bar, x, bar_w, top, PALETTE[s % len(PALETTE)], f"{item.label} · {group}"))
    body.extend(_legend([s.label for s in series]))
    return _frame(title, y_label, top, body)


def _group_label(text: str, x: float, y: float, width: float) -> str:
    """A group's label, its words on two lines where one line would overrun the group's width."""
    words = text.split(" ")
    if len(text) * CHAR_W <= width or len(words) < 2:
        return f'<text x="{x:.1f}" y="{y}" text-anchor="middle">{escape(text)}</text>'
    splits = [(" ".join(words[:i]), " ".join(words[i:])) for i in range(1, len(words))]
    first, second = min(splits, key=lambda pair: max(len(pair[0]), len(pair[1])))
    spans = f'<tspan x="{x:.1f}" dy="0">{escape(first)}</tspan><tspan x="{x:.1f}" dy="13">{escape(second)}</tspan>'
    return f'<text x="{x:.1f}" y="{y}" text-anchor="middle">{spans}</text>'


def _bar(bar: Bar, x: float, width: float, top: float, colour: str, label: str) -> list[str]:
    plot_h = HEIGHT - TOP - BOTTOM

    def y(v: float) -> float:
        return TOP + plot_h - plot_h * min(v, top) / top

    if bar.value is None:
        return [f'<text x="{x + width / 2:.1f}" y="{TOP + plot_h - 4}" text-anchor="middle" fill="#999">n/a</text>']
    parts = [
        f'<rect x="{x:.1f}" y="{y(bar.value):.1f}" width="{width * 0.92:.1f}" '
        f'height="{TOP + plot_h - y(bar.value):.1f}" fill="{colour}">'
        f"<title>{escape(label)}: {_fmt(bar.value)}</title></rect>"
    ]
    top_y = y(bar.high) if bar.high is not None else y(bar.value)
    parts.append(f'<text x="{x + width * 0.46:.1f}" y="{top_y - 4:.1f}" text-anchor="middle">{_fmt(bar.value)}</text>')
    if bar.low is not None and bar.high is not None:
        mid = x + width * 0.46
        parts.append(
            f'<line x1="{mid:.1f}" x2="{mid:.1f}" y1="{y(bar.low):.1f}" y2="{y(bar.high):.1f}" '
            'stroke="#222" stroke-width="1.5"/>'
        )
    return parts


def _legend(labels: Sequence[str]) -> list[str]:
    parts = []
    for i, label in enumerate(labels):
        x = LEFT + (i % 4) * 160
        y = HEIGHT - 30 + (i // 4) * 14
        parts.append(f'<rect x="{x}" y="{y - 9}" width="10" height="10" fill="{PALETTE[i % len(PALETTE)]}"/>')
        parts.append(f'<text x="{x + 14}" y="{y}">{escape(label)}</text>')
    return parts


def pareto_front(points: Sequence[Point]) -> list[Point]:
    """Points no other point beats on both axes (lower cost ``x``, higher success ``y``)."""
    front = [
        p for p in points
        if not any((q.x <= p.x and q.y >= p.y) and (q.x < p.x or q.y > p.y) for q in points)
    ]  # fmt: skip
    return sorted(front, key=lambda p: p.x)


def scatter(title: str, x_label: str, y_label: str, points: Sequence[Point]) -> str:
    """Cost (x) against success (y, 0–1), the Pareto front joined by a line."""
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    x_max = _nice_max([p.x for p in points])
    names = sorted({p.series for p in points})

    def xy(p: Point) -> tuple[float, float]:
        return LEFT + plot_w * p.x / x_max, TOP + plot_h - plot_h * p.y

    body = [f'<text x="{LEFT + plot_w / 2}" y="{TOP + plot_h + 30}" text-anchor="middle">{escape(x_label)}</text>']
    for i in range(6):
        x = LEFT + plot_w * i / 5
        body.append(f'<text x="{x:.1f}" y="{TOP + plot_h + 14}" text-anchor="middle">{_fmt(x_max * i / 5)}</text>')
    front = pareto_front(points)
    if len(front) > 1:
        path = " ".join(f"{a:.1f},{b:.1f}" for a, b in map(xy, front))
        body.append(f'<polyline points="{path}" fill="none" stroke="#888" stroke-dasharray="4 3"/>')
    for index, p in enumerate(points):
        x, y = xy(p)
        colour = PALETTE[names.index(p.series) % len(PALETTE)]
        ring = ' stroke="#000" stroke-width="1.5"' if p in front else ""
        body.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="6" fill="{colour}"{ring}><title>{escape(p.label)}: '
                    f"cost {_fmt(p.x)}, success {_fmt(p.y)}</title></circle>")  # fmt: skip
        # stagger labels: points of similar cost and success would print over each other
        right = x > LEFT + plot_w * 0.7  # labels of points near the right edge go to their left
        anchor, dx = ("end", -8) if right else ("start", 8)
        body.append(f'<text x="{x + dx:.1f}" y="{y - 8 + 13 * (index % 3):.1f}" text-anchor="{anchor}">'
                    f"{escape(p.label)}</text>")  # fmt: skip
    body.extend(_legend(names))
    return _frame(title, y_label, 1.0, body)
