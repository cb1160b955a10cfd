"""The leaderboard as a Markdown page."""

from __future__ import annotations

from collections.abc import Sequence

from gym_trainfail.leaderboard.views import View


def table(view: View) -> str:
    """A GitHub-flavoured Markdown table with its title and note, its footnotes as warnings below."""
    lines = [f"## {view.title}", "", view.note, ""] if view.note else [f"## {view.title}", ""]
    lines.append("| " + " | ".join(view.headers) + " |")
    lines.append("|" + "|".join("---" for _ in view.headers) + "|")
    lines.extend("| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |" for row in view.rows)
    for footnote in view.footnotes:
        lines.extend(["", f"**Warning:** {footnote}"])
    return "\n".join(lines) + "\n"


def page(title: str, intro: Sequence[str], views: Sequence[View], plots: Sequence[tuple[str, str]]) -> str:
    """The whole page: title, intro lines, tables, links to the plot files."""
    parts = [f"# {title}", "", *intro, ""]
    parts.extend(table(v) for v in views)
    if plots:
        parts.append("## Plots\n")
        parts.extend(f"![{caption}]({name})\n" for name, caption in plots)
    return "\n".join(parts)
