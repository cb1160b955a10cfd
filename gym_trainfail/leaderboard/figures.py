"""The leaderboard's figures, drawn with matplotlib on its Agg canvas (no display) and saved as
SVG and PNG.

What is drawn comes from :mod:`~gym_trainfail.leaderboard.plots`; how agents and arms look from
:mod:`~gym_trainfail.leaderboard.colours`. Bars are horizontal, so case and milestone names sit
one per row and never collide; points are named in a legend, never by labels beside them. Output is
byte-for-byte repeatable for one matplotlib version: text stays text in the SVG (a page can lay it
out and a test can measure it), ids are salted with a fixed string, and no date, creator or
software version is written.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from pathlib import Path

from gym_trainfail.errors import MissingExtraError

try:
    import matplotlib
    from matplotlib.artist import Artist
    from matplotlib.axes import Axes
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch
    from matplotlib.ticker import MaxNLocator, PercentFormatter
except ImportError as exc:  # an optional extra: say how to get it
    raise MissingExtraError("matplotlib", "leaderboard", "the leaderboard's figures") from exc

from gym_trainfail.leaderboard.colours import Palette, group_label
from gym_trainfail.leaderboard.plots import BarChart, Panel, Point, pareto_front

#: Inches per bar, and per category at least (a row of tick labels must fit).
BAR_HEIGHT, CATEGORY_MIN = 0.12, 0.3
PNG_DPI = 200
#: Marker sizes by arm rank (control, TrainCheck, …): a control point drawn over a TrainCheck
#: point at the same place still shows both.
_MARKER_SIZES = (6.0, 10.0, 8.0, 12.0)
INTERVAL = "#222222"


def write(out_dir: Path, name: str, draw: Callable[[], Figure]) -> tuple[Path, Path]:
    """Draw a figure under fixed settings and save it as ``name.svg`` and ``name.png`` in ``out_dir``."""
    svg, png = out_dir / f"{name}.svg", out_dir / f"{name}.png"
    with matplotlib.rc_context(
        {
            "svg.fonttype": "none",  # text stays text: pages lay it out, tests measure it
            "svg.hashsalt": "gym-trainfail",  # ids from a fixed salt, not a random one
            "font.family": "DejaVu Sans",  # bundled with matplotlib, so every machine draws the same
            "text.parse_math": False,  # an agent or case name with "$" is text, not TeX
            "font.size": 9,
            "axes.titlesize": 10,
            "axes.titlelocation": "left",
            "axes.spines.top": False,
            "axes.spines.right": False,
            "axes.axisbelow": True,
            "legend.fontsize": 8.5,
            "legend.frameon": False,
            "hatch.linewidth": 0.6,
        }
    ):
        figure = draw()
        FigureCanvasAgg(figure)
        figure.savefig(svg, format="svg", metadata={"Date": None, "Creator": None})
        figure.savefig(png, format="png", dpi=PNG_DPI, metadata={"Software": None})
    return svg, png


def bar_chart(chart: BarChart, palette: Palette) -> Figure:
    """Horizontal grouped bars with interval whiskers; one panel per small multiple (two columns)."""
    columns = 1 if len(chart.panels) == 1 else 2
    rows = math.ceil(len(chart.panels) / columns)
    handles = _legend(chart, palette)
    series = max((len(p.series) for p in chart.panels), default=1) or 1
    categories = max((len(p.categories) for p in chart.panels), default=1) or 1
    panel_height = categories * max(series * BAR_HEIGHT + 0.08, CATEGORY_MIN) + 0.6
    width = 7.0 if columns == 1 else 9.0
    ncols = _legend_columns(_labels(handles), width)
    legend_height = 0.25 * math.ceil(len(handles) / ncols) + 0.3
    figure = Figure(figsize=(width, rows * panel_height + legend_height + 0.4), layout="constrained")
    axes = list(figure.subplots(rows, columns, sharey=True, squeeze=False).flat)
    for ax, panel in zip(axes, chart.panels, strict=False):
        _panel(ax, panel, chart, palette)
    for ax in axes[len(chart.panels) :]:
        figure.delaxes(ax)
    if len(chart.panels) == 1:
        axes[0].set_xlabel(chart.axis)
    else:
        figure.supxlabel(chart.axis, fontsize=9)
    figure.legend(handles=handles, loc="outside upper center", ncols=ncols)
    return figure


def _panel(ax: Axes, panel: Panel, chart: BarChart, palette: Palette) -> None:
    height = 0.8 / max(1, len(panel.series))
    for j, series in enumerate(panel.series):
        style = palette.style(series.agent, series.group)
        for i, bar in enumerate(series.bars):
            y = i - 0.4 + (j + 0.5) * height
            if bar.value is None:
                ax.plot([0.0], [y], marker="x", markersize=4, color=style.edge, linestyle="none", clip_on=False)
                continue
            ax.barh(y, bar.value, height=height * 0.88, color=style.face, edgecolor=style.edge, hatch=style.hatch,
                    linewidth=0.6)  # fmt: skip
            if bar.low is not None and bar.high is not None and bar.high > bar.low:
                error = [[max(0.0, bar.value - bar.low)], [max(0.0, bar.high - bar.value)]]
                ax.errorbar(bar.value, y, xerr=error, fmt="none", ecolor=INTERVAL, elinewidth=0.8, capsize=2)
    ax.set_yticks(range(len(panel.categories)), panel.categories)
    ax.set_ylim(len(panel.categories) - 0.5, -0.5)  # the first category on top
    ax.tick_params(axis="y", length=0)
    ax.xaxis.set_major_locator(MaxNLocator(nbins=5))
    ax.grid(axis="x", color="#e5e5e5", linewidth=0.6)
    if chart.share:
        ax.set_xlim(0.0, 1.0)
        ax.xaxis.set_major_formatter(PercentFormatter(1.0))
    else:
        ax.set_xlim(left=0.0)
    if panel.title:
        ax.set_title(panel.title)


def _legend(chart: BarChart, palette: Palette) -> list[Artist]:
    keys = dict.fromkeys((s.agent, s.group) for p in chart.panels for s in p.series)
    handles: list[Artist] = []
    for agent, group in keys:
        style = palette.style(agent, group)
        label = f"{agent} · {group_label(group)}"
        handles.append(Patch(facecolor=style.face, edgecolor=style.edge, hatch=style.hatch, linewidth=0.6, label=label))
    if any(b.value is None for p in chart.panels for s in p.series for b in s.bars):
        handles.append(Line2D([], [], marker="x", markersize=4, color="#444444", linestyle="none", label=chart.missing))
    return handles


#: Inches a legend entry takes besides its text (marker, padding), and per character of its text at
#: the legend's font size (a generous average, so long labels never run past the figure's edge).
_LEGEND_ENTRY_IN, _LEGEND_CHAR_IN = 0.55, 0.068


def _labels(handles: Sequence[Artist]) -> list[str]:
    return [str(h.get_label()) for h in handles]


def _legend_columns(labels: Sequence[str], width_in: float) -> int:
    """Up to three columns, as many as fit the figure's width with its longest label."""
    longest = max((len(label) for label in labels), default=0)
    fit = int(width_in // (_LEGEND_ENTRY_IN + _LEGEND_CHAR_IN * longest))
    return max(1, min(3, len(labels), fit))


def cost_chart(points: Sequence[Point], palette: Palette) -> Figure:
    """Mean adjusted seconds per episode against the share solved, per agent × arm, with both
    intervals; the Pareto front (cheaper and at least as successful) joined by a dashed line."""
    handles: list[Artist] = []
    width = 7.0
    labels = [f"{p.agent} · {group_label(p.arm)} (n={p.n})" for p in points]
    rows = math.ceil((len(points) + 1) / _legend_columns(labels, width))
    figure = Figure(figsize=(width, 4.2 + 0.25 * rows), layout="constrained")
    ax = figure.add_subplot()
    for p, label in zip(points, labels, strict=True):
        style = palette.style(p.agent, p.arm)
        xerr = [[max(0.0, p.x - p.x_low)], [max(0.0, p.x_high - p.x)]]
        yerr = [[max(0.0, p.y - p.y_low)], [max(0.0, p.y_high - p.y)]]
        size = _MARKER_SIZES[palette.rank(p.arm) % len(_MARKER_SIZES)]  # smaller on top: both stay visible
        ax.errorbar(p.x, p.y, xerr=xerr, yerr=yerr, fmt=style.marker, markersize=size, color=style.edge,
                    markerfacecolor=style.face, markeredgecolor=style.edge, elinewidth=0.8, capsize=2,
                    zorder=3 + 1 / size)  # fmt: skip
        handles.append(Line2D([], [], marker=style.marker, markersize=size, markerfacecolor=style.face,
                              markeredgecolor=style.edge, linestyle="none",
                              label=label))  # fmt: skip
    front = pareto_front(points)
    if len(front) > 1:
        (line,) = ax.plot([p.x for p in front], [p.y for p in front], linestyle="--", color="#888888", linewidth=1,
                          zorder=0, label="Pareto front")  # fmt: skip
        handles.append(line)
    ax.set_xlabel("mean adjusted seconds per episode (95% bootstrap CI)")
    ax.set_ylabel("share of episodes solved (95% bootstrap CI)")
    right = ax.get_xlim()[1]
    ax.set_xlim(-0.02 * right, right)  # a point at zero cost stays whole, off the axis line
    ax.set_ylim(-0.05, 1.05)
    ax.yaxis.set_major_formatter(PercentFormatter(1.0))
    ax.grid(color="#e5e5e5", linewidth=0.6)
    figure.legend(handles=handles, loc="outside upper center", ncols=_legend_columns(_labels(handles), width))
    return figure
