"""Leaderboards from batch runs: JSONL/CSV tables, a Markdown page, a static HTML page (sortable
tables, inline figures) and the figures as SVG and PNG (matplotlib, the ``leaderboard`` extra), all
computed from the batch's adjudications (see :mod:`gym_trainfail.batch`), including their rubric
milestones, bootstrap intervals and the paired comparison's tests.
"""

from __future__ import annotations

from gym_trainfail.leaderboard.render import render_leaderboard
from gym_trainfail.leaderboard.table import Batch, load_batch, milestone_rows, paired_rows, summary_rows, totals

__all__ = ["Batch", "load_batch", "milestone_rows", "paired_rows", "render_leaderboard", "summary_rows", "totals"]
