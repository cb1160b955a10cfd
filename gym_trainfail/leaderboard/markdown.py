"""The leaderboard as a Markdown page."""

from __future__ import annotations

from collections.abc import Sequence

from gym_trainfail.leaderboard.views import Cell, View


def _text(cell: str | Cell) -> str:
    """A cell's text, ``⚠`` after it when it carries a warning; ``|`` escaped."""
    mark = " ⚠" if isinstance(cell, Cell) and cell.warning else ""
    return (str(cell) + mark).replace("|", "\\|")


def table(view: View) -> str:
    """A GitHub-flavoured Markdown table with its title and note, its footnotes as warnings below."""
    lines = [f"## {view.title}", "", view.note, ""] if view.note else [f"## {view.title}", ""]
    lines.append("| " + " | ".join(view.headers) + " |")
    lines.append("|" + "|".join("---:" if _numeric(view, i) else "---" for i in range(len(view.headers))) + "|")
    lines.extend("| " + " | ".join(_text(cell) for cell in row) + " |" for row in view.rows)
    for footnote in view.footnotes:
        lines.extend(["", f"**Warning:** {footnote}"])
    return "\n".join(lines) + "\n"


def _numeric(view: View, column: int) -> bool:
    """Right-align a column of :class:`Cell` numbers."""
    cells = [row[column] for row in view.rows]
    return bool(cells) and all(isinstance(c, Cell) for c in cells)


def page(title: str, intro: Sequence[str], views: Sequence[View], plots: Sequence[tuple[str, str]]) -> str:
    """The whole page: title, intro lines, tables, the figures (SVG, with a link to each PNG)."""
    parts = [f"# {title}", "", *intro, ""]
    parts.extend(table(v) for v in views)
    if plots:
        parts.append("## Figures\n")
        parts.extend(f"![{caption}]({name}.svg)\n\n[PNG]({name}.png)\n" for name, caption in plots)
    return "\n".join(parts)
