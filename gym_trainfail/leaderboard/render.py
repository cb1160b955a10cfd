"""Render a batch into a leaderboard folder.

The source is a batch run directory, or a leaderboard folder this renders (its ``batch.json``,
see :mod:`~gym_trainfail.leaderboard.board`) read back so newer code can redraw it. Writes
``episodes``/``summary``/``milestones``/``paired`` as JSONL and CSV, ``totals.json``,
``batch.json``, ``README.md`` (Markdown tables), ``index.html`` (tables and inline figures) and
each figure as ``.svg`` and ``.png``, drawn with matplotlib (the ``leaderboard`` extra).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from gym_trainfail.batch.layout import RunLayout
from gym_trainfail.errors import TrainFailError
from gym_trainfail.leaderboard import html, markdown
from gym_trainfail.leaderboard.board import is_board, load_board, write_board_record
from gym_trainfail.leaderboard.colours import Palette
from gym_trainfail.leaderboard.export import write_csv, write_jsonl
from gym_trainfail.leaderboard.plots import (
    activated_chart,
    cost_points,
    first_valid_chart,
    milestone_chart,
    pass_rate_chart,
)
from gym_trainfail.leaderboard.table import Batch, load_batch, milestone_rows, paired_rows, summary_rows, totals
from gym_trainfail.leaderboard.views import (
    View,
    compact_view,
    episodes_view,
    milestone_views,
    paired_milestones_view,
    paired_view,
    summary_view,
    totals_lines,
)

#: Figure captions by file stem, in page order.
CAPTIONS = {
    "pass-rate": "Pass rate of the final revision per case, agent and arm: the share of graded episodes, with its "
    "95% percentile bootstrap interval (n per bar in the table above; with fewer than 5 episodes an interval says "
    "little).",
    "first-valid-time": "Adjusted seconds to the first valid revision per case, agent and arm: mean over the "
    "episodes that reached one, with its 95% bootstrap interval; × marks none solved.",
    "cost-success": "Cost against success per agent and arm, over every case: mean adjusted seconds per graded "
    "episode against the share solved, both with 95% bootstrap intervals; the dashed line joins the Pareto front "
    "(no other agent and arm is both cheaper and more successful).",
    "milestones": "Adjusted seconds to each milestone, one panel per case: mean over the graded episodes that "
    "reached it, with its 95% bootstrap interval; × marks none reached.",
    "traincheck-activated": "The TrainCheck arm split by whether TrainCheck was activated (rubric engagement "
    "activated or acted), against the control arm, for the agents that activated it: adjusted seconds to each "
    "milestone, mean and 95% bootstrap interval; × marks none reached.",
}


def render_leaderboard(source: Path, out_dir: Path, *, title: str | None = None, figures: bool = True) -> list[Path]:
    """Render the batch in ``source`` (a run directory or a rendered leaderboard) into ``out_dir``;
    returns the files written, ``index.html`` last. ``figures=False`` writes the tables and pages
    without figures (and without needing matplotlib)."""
    from_board = is_board(source) and not RunLayout(source).plan.exists()
    if from_board:
        board = load_board(source)
        batch, heading = board.batch, title or board.title
    else:
        batch = load_batch(source)
        heading = title or f"gym-trainfail leaderboard: {source.resolve().name}"
    try:
        return _render(batch, out_dir, heading, figures)
    except KeyError as exc:
        if from_board:
            raise TrainFailError(
                f"{source} was rendered by an older gym-trainfail: its rows lack {exc}; render the leaderboard "
                "from the batch's run directory instead (trainfail leaderboard RUN_DIR)"
            ) from None
        raise


def _render(batch: Batch, out_dir: Path, heading: str, figures: bool) -> list[Path]:
    summary, paired, figures_totals = summary_rows(batch), paired_rows(batch), totals(batch)
    milestones = milestone_rows(batch)
    episodes = list(batch.episodes)
    out_dir.mkdir(parents=True, exist_ok=True)
    written = [
        write_jsonl(out_dir / "episodes.jsonl", episodes),
        write_csv(out_dir / "episodes.csv", episodes),
        write_jsonl(out_dir / "summary.jsonl", summary),
        write_csv(out_dir / "summary.csv", summary),
        write_jsonl(out_dir / "milestones.jsonl", milestones),
        write_csv(out_dir / "milestones.csv", milestones),
    ]
    if paired:
        written += [write_jsonl(out_dir / "paired.jsonl", paired), write_csv(out_dir / "paired.csv", paired)]
    if batch.gave_up:
        written.append(write_jsonl(out_dir / "gave-up.jsonl", list(batch.gave_up)))
    (out_dir / "totals.json").write_text(json.dumps(figures_totals, indent=2, sort_keys=True) + "\n")
    written += [out_dir / "totals.json", write_board_record(out_dir, batch, heading)]
    plots = _draw(batch, out_dir, summary, milestones) if figures else []
    written += [out_dir / f"{p.name}{suffix}" for p in plots for suffix in (".svg", ".png")]

    compact, full = compact_view(summary), summary_view(summary)
    views: list[View] = [paired_view(paired)] if paired else []
    folded = [*([paired_milestones_view(paired)] if paired else []), *milestone_views(milestones)]
    folded.append(episodes_view(episodes))
    intro = [_describe(batch), *totals_lines(figures_totals)]
    captions = [(p.name, p.caption) for p in plots]
    (out_dir / "README.md").write_text(
        markdown.page(heading, intro, [compact, full, *views, *folded], captions), encoding="utf-8"
    )
    page = html.page(heading, intro, (compact, full), views, folded, plots)
    (out_dir / "index.html").write_text(page, encoding="utf-8")
    return [*written, out_dir / "README.md", out_dir / "index.html"]


def _draw(
    batch: Batch, out_dir: Path, summary: Sequence[Mapping[str, Any]], milestones: Sequence[Mapping[str, Any]]
) -> list[html.Plot]:
    """Every figure as SVG and PNG in ``out_dir``; the TrainCheck split only where it exists."""
    # matplotlib is an optional extra: importing the drawing module only here keeps the rest of
    # `trainfail` usable without it, and its import error names the extra to install
    from gym_trainfail.leaderboard import figures

    spec = batch.plan.spec
    cases, arms, agents = list(spec.cases), list(spec.arms), list(spec.agents)
    palette = Palette(agents, arms)
    draw: dict[str, Callable[[], Any]] = {
        "pass-rate": lambda: figures.bar_chart(pass_rate_chart(summary, cases), palette),
        "first-valid-time": lambda: figures.bar_chart(first_valid_chart(summary, cases), palette),
        "cost-success": lambda: figures.cost_chart(cost_points(batch.episodes), palette),
        "milestones": lambda: figures.bar_chart(milestone_chart(milestones, cases, agents, arms), palette),
    }
    split = activated_chart(milestones, cases)
    if split is not None:
        draw["traincheck-activated"] = lambda: figures.bar_chart(split, palette)
    plots = []
    for name, drawing in draw.items():
        svg, _ = figures.write(out_dir, name, drawing)
        plots.append(html.Plot(name, CAPTIONS[name], svg.read_text(encoding="utf-8")))
    return plots


def _describe(batch: Batch) -> str:
    spec = batch.plan.spec
    cases = ", ".join(spec.cases)
    return (
        f"Batch of {len(batch.plan.episodes)} episodes: cases {cases}; arms {', '.join(spec.arms)}; "
        f"agents {', '.join(spec.agents)}; {spec.trials} trial(s) each; sandbox {spec.sandbox}; "
        f"profile {spec.profile}."
    )
