"""The leaderboard as one static HTML page, plots inline as SVG (no scripts, no network)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from html import escape

from gym_trainfail.leaderboard.views import View

STYLE = """
body { font-family: system-ui, sans-serif; margin: 2rem auto; max-width: 1200px; color: #222; }
table { border-collapse: collapse; margin: 0.5rem 0 1.5rem; font-size: 0.85rem; }
th, td { border: 1px solid #ddd; padding: 0.25rem 0.5rem; text-align: left; }
th { background: #f4f4f4; }
.note { color: #555; font-size: 0.85rem; max-width: 60rem; }
.warning { color: #8a4b00; font-size: 0.85rem; margin: -1rem 0 1.5rem; }
figure { margin: 1rem 0; }
"""


def table(view: View) -> str:
    """A titled HTML table, its footnotes as warnings below."""
    head = "".join(f"<th>{escape(h)}</th>" for h in view.headers)
    body = "\n".join("<tr>" + "".join(f"<td>{escape(c)}</td>" for c in row) + "</tr>" for row in view.rows)
    slug = re.sub(r"[^a-z0-9]+", "-", view.title.lower().replace("×", "x")).strip("-")
    warnings = "".join(f'\n<p class="warning">Warning: {escape(f)}</p>' for f in view.footnotes)
    return (
        f'<section id="{escape(slug)}"><h2>{escape(view.title)}</h2>'
        f'<p class="note">{escape(view.note)}</p>'
        f"<table><thead><tr>{head}</tr></thead>\n<tbody>\n{body}\n</tbody></table>{warnings}</section>"
    )


def page(title: str, intro: Sequence[str], views: Sequence[View], plots: Sequence[tuple[str, str]]) -> str:
    """The page: intro, plots (inline SVG with captions), then the tables."""
    figures = "\n".join(f"<figure>{svg}<figcaption>{escape(caption)}</figcaption></figure>" for svg, caption in plots)
    paragraphs = "\n".join(f"<p>{escape(line)}</p>" for line in intro)
    tables = "\n".join(table(v) for v in views)
    return (
        "<!DOCTYPE html>\n"
        f'<html lang="en"><head><meta charset="utf-8"><title>{escape(title)}</title>'
        f"<style>{STYLE}</style></head>\n<body>\n<h1>{escape(title)}</h1>\n{paragraphs}\n"
        f'<section id="plots"><h2>Plots</h2>\n{figures}\n</section>\n{tables}\n</body></html>\n'
    )
