"""Render a batch run directory into a leaderboard folder.

Writes ``episodes``/``summary``/``milestones``/``paired`` as JSONL and CSV, ``totals.json``,
``README.md`` (Markdown tables), ``index.html`` (tables and inline SVG plots) and the plots as
``.svg`` files (one milestone plot per case).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from gym_trainfail.leaderboard import html, markdown
from gym_trainfail.leaderboard.export import write_csv, write_jsonl
from gym_trainfail.leaderboard.plots import first_valid_plot, milestone_plot, pareto_plot, pass_rate_plot
from gym_trainfail.leaderboard.table import Batch, load_batch, milestone_rows, paired_rows, summary_rows, totals
from gym_trainfail.leaderboard.views import (
    View,
    episodes_view,
    milestone_views,
    paired_milestones_view,
    paired_view,
    summary_view,
    totals_lines,
)

PLOTS = (
    ("pass-rate.svg", "Pass rate per case, agent and arm"),
    ("first-valid-time.svg", "Adjusted seconds to the first valid revision"),
    ("pareto.svg", "Cost against success, per agent and arm"),
)


def render_leaderboard(run_dir: Path, out_dir: Path, *, title: str | None = None) -> list[Path]:
    """Render the batch in ``run_dir`` into ``out_dir``; returns the files written."""
    batch = load_batch(run_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    summary, paired, figures = summary_rows(batch), paired_rows(batch), totals(batch)
    milestones = milestone_rows(batch)
    episodes = list(batch.episodes)
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
    (out_dir / "totals.json").write_text(json.dumps(figures, indent=2, sort_keys=True) + "\n")
    written.append(out_dir / "totals.json")
    cases, arms = list(batch.plan.spec.cases), list(batch.plan.spec.arms)
    plots = [*PLOTS, *((milestone_file(case), f"Adjusted seconds to each milestone: {case}") for case in cases)]
    svgs = [pass_rate_plot(summary, cases), first_valid_plot(summary, cases), pareto_plot(episodes)]
    svgs += [milestone_plot(milestones, case, arms) for case in cases]
    for (name, _), svg in zip(plots, svgs, strict=True):
        (out_dir / name).write_text(svg + "\n", encoding="utf-8")
        written.append(out_dir / name)
    views: list[View] = [summary_view(summary), *milestone_views(milestones)]
    if paired:
        views += [paired_view(paired), paired_milestones_view(paired)]
    views.append(episodes_view(episodes))
    heading = title or f"gym-trainfail leaderboard: {run_dir.resolve().name}"
    intro = [_describe(batch), *totals_lines(figures)]
    (out_dir / "README.md").write_text(markdown.page(heading, intro, views, plots), encoding="utf-8")
    captioned = [(svg, caption) for svg, (_, caption) in zip(svgs, plots, strict=True)]
    (out_dir / "index.html").write_text(html.page(heading, intro, views, captioned), encoding="utf-8")
    return [*written, out_dir / "README.md", out_dir / "index.html"]


def milestone_file(case: str) -> str:
    """The milestone plot's file name: ``milestones-TrainFail-DDPTokenAverage-v0.svg``."""
    return "milestones-" + re.sub(r"[^A-Za-z0-9._-]+", "-", case).strip("-") + ".svg"


def _describe(batch: Batch) -> str:
    spec = batch.plan.spec
    cases = ", ".join(spec.cases)
    return (
        f"Batch of {len(batch.plan.episodes)} episodes: cases {cases}; arms {', '.join(spec.arms)}; "
        f"agents {', '.join(spec.agents)}; {spec.trials} trial(s) each; sandbox {spec.sandbox}; "
        f"profile {spec.profile}."
    )
