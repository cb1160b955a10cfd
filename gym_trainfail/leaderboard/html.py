"""The leaderboard as one static HTML page: the compact table first (sortable by any column, the
full table one click away), the figures inline as SVG, then the other tables. Its one script is
inline and the page loads nothing from a network."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from html import escape

from gym_trainfail.leaderboard.views import Cell, View

STYLE = """
body { font-family: system-ui, sans-serif; margin: 2rem auto; max-width: 1200px; padding: 0 1rem; color: #222;
       line-height: 1.4; }
h2 { margin-top: 2rem; }
table { border-collapse: collapse; margin: 0.5rem 0 1rem; font-size: 0.85rem; }
th, td { border-bottom: 1px solid #e3e3e3; padding: 0.3rem 0.6rem; text-align: left; vertical-align: top; }
td { white-space: nowrap; }
th { background: #f4f4f4; vertical-align: bottom; }
table.sortable th { cursor: pointer; user-select: none; }
table.sortable th::after { content: "\\2195"; color: #aaa; margin-left: 0.3em; font-size: 0.75em; }
table.sortable th[aria-sort="ascending"]::after { content: "\\25B2"; color: #222; }
table.sortable th[aria-sort="descending"]::after { content: "\\25BC"; color: #222; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
tbody tr:hover { background: #fafafa; }
.scroll { overflow-x: auto; }
.note { color: #555; font-size: 0.85rem; max-width: 60rem; }
.warning { color: #8a4b00; font-size: 0.85rem; margin: -0.5rem 0 1rem; }
.small-n { color: #8a4b00; cursor: help; }
details { margin: 0.5rem 0 1rem; }
details > summary { cursor: pointer; font-weight: 600; }
figure { margin: 1.5rem 0; }
figure svg { display: block; width: 100%; max-width: 900px; height: auto; }
figcaption { color: #555; font-size: 0.85rem; max-width: 60rem; }
"""

#: Sorts a ``table.sortable`` by the clicked column: numbers by value (a cell's ``data-sort``, else its
#: leading number), text alphabetically, empty cells and dashes last in either direction.
SCRIPT = """
(function () {
  "use strict";
  function key(cell) {
    var given = cell.getAttribute("data-sort");
    if (given !== null) { return given === "" ? null : Number(given); }
    var text = cell.textContent.trim();
    if (text === "" || text === "\\u2014") { return null; }
    var found = text.replace(/\\u2212/g, "-").replace(/,/g, "").match(/^[<\\[]?([+-]?\\d+(\\.\\d+)?)/);
    return found ? Number(found[1]) : text.toLowerCase();
  }
  function compare(a, b, direction) {
    if (a.key === null || b.key === null) { return a.key === b.key ? a.index - b.index : (a.key === null ? 1 : -1); }
    var numeric = typeof a.key === "number", other = typeof b.key === "number";
    if (numeric !== other) { return (numeric ? -1 : 1) * direction; }
    if (a.key < b.key) { return -direction; }
    if (a.key > b.key) { return direction; }
    return a.index - b.index;
  }
  function sort(table, header, column) {
    var direction = header.getAttribute("aria-sort") === "ascending" ? -1 : 1;
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (th) { th.removeAttribute("aria-sort"); });
    header.setAttribute("aria-sort", direction === 1 ? "ascending" : "descending");
    var body = table.tBodies[0];
    var rows = Array.prototype.map.call(body.rows, function (row, index) {
      return { row: row, index: index, key: key(row.cells[column]) };
    });
    rows.sort(function (a, b) { return compare(a, b, direction); });
    rows.forEach(function (item) { body.appendChild(item.row); });
  }
  Array.prototype.forEach.call(document.querySelectorAll("table.sortable"), function (table) {
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (header, column) {
      header.tabIndex = 0;
      header.title = "sort by " + header.textContent;
      header.addEventListener("click", function () { sort(table, header, column); });
      header.addEventListener("keydown", function (event) {
        if (event.key === "Enter" || event.key === " ") { event.preventDefault(); sort(table, header, column); }
      });
    });
  });
})();
"""

_NUMBER = re.compile(r"^[<\[]?[−+-]?\d")
_NUM = ' class="num"'
NON_BREAKING_HYPHEN = "\u2011"


@dataclass(frozen=True)
class Plot:
    """A figure on the page: its file stem (``name.svg``, ``name.png`` beside the page), caption, SVG."""

    name: str
    caption: str
    svg: str


def slug(title: str) -> str:
    """An anchor for a title: ``Per case × arm × agent`` → ``per-case-x-arm-x-agent``."""
    return re.sub(r"[^a-z0-9]+", "-", title.lower().replace("×", "x")).strip("-")


def _numeric_columns(view: View) -> list[bool]:
    """Columns whose every filled cell starts with a number (those are right-aligned)."""
    columns = []
    for index in range(len(view.headers)):
        cells = [row[index] for row in view.rows]
        filled = [c for c in cells if str(c).strip() not in ("", "—")]
        columns.append(bool(filled) and all(_NUMBER.match(str(c)) for c in filled))
    return columns


def _cell(cell: str | Cell, numeric: bool) -> str:
    attributes = _NUM if numeric else ""
    if not isinstance(cell, Cell):
        return f"<td{attributes}>{escape(cell)}</td>"
    if cell.sort is not None or numeric:
        attributes += f' data-sort="{"" if cell.sort is None else repr(float(cell.sort))}"'
    warning = escape(cell.warning or "")
    mark = f' <span class="small-n" title="{warning}" aria-label="{warning}">⚠</span>' if cell.warning else ""
    return f"<td{attributes}>{escape(cell.text)}{mark}</td>"


def table(view: View) -> str:
    """A sortable HTML table (numbers right-aligned, warnings beside the cells they concern)."""
    numeric = _numeric_columns(view)
    # headers break between words, never at a hyphen ("device-s")
    head = "".join(
        f'<th scope="col"{_NUM if n else ""}>{escape(h).replace("-", NON_BREAKING_HYPHEN)}</th>'
        for h, n in zip(view.headers, numeric, strict=True)
    )
    body = "\n".join(
        "<tr>" + "".join(_cell(c, n) for c, n in zip(row, numeric, strict=True)) + "</tr>" for row in view.rows
    )
    markup = f'<table class="sortable"><thead><tr>{head}</tr></thead>\n<tbody>\n{body}\n</tbody></table>'
    return f'<div class="scroll">{markup}</div>'


def section(view: View, *, folded: bool = False) -> str:
    """A titled table with its note and warnings; ``folded``: inside a closed ``<details>``."""
    warnings = "".join(f'\n<p class="warning">Warning: {escape(f)}</p>' for f in view.footnotes)
    inner = f'<p class="note">{escape(view.note)}</p>\n{table(view)}{warnings}'
    if folded:
        return (f'<section id="{slug(view.title)}"><details><summary>{escape(view.title)}</summary>\n{inner}'
                "</details></section>")  # fmt: skip
    return f'<section id="{slug(view.title)}"><h2>{escape(view.title)}</h2>\n{inner}</section>'


def summary_section(compact: View, full: View) -> str:
    """The compact table, and the full one behind a click."""
    warnings = "".join(f'\n<p class="warning">{escape(f)}</p>' for f in compact.footnotes)
    return (
        f'<section id="{slug(compact.title)}"><h2>{escape(compact.title)}</h2>\n'
        f'<p class="note">{escape(compact.note)}</p>\n{table(compact)}{warnings}\n'
        f'<details id="full-table"><summary>All {len(full.headers)} columns</summary>\n'
        f'<p class="note">{escape(full.note)}</p>\n{table(full)}</details></section>'
    )


def inline_svg(svg: str, prefix: str, label: str) -> str:
    """An SVG file's text made fit to sit in a page beside others: no XML prolog, every id (and
    every reference to one) prefixed so that ids stay unique in the page, an accessible name."""
    start = svg.index("<svg")
    body = re.sub(r'\bid="([^"]+)"', lambda m: f'id="{prefix}-{m[1]}"', svg[start:])
    body = re.sub(r"url\(#([^)]+)\)", lambda m: f"url(#{prefix}-{m[1]})", body)
    body = re.sub(r'href="#([^"]+)"', lambda m: f'href="#{prefix}-{m[1]}"', body)
    return body.replace("<svg", f'<svg role="img" aria-label="{escape(label)}"', 1).strip()


def figure(plot: Plot) -> str:
    """A figure: the inline SVG, its caption and links to its SVG and PNG files."""
    links = f'<a href="{escape(plot.name)}.svg">SVG</a> · <a href="{escape(plot.name)}.png">PNG</a>'
    svg = inline_svg(plot.svg, f"fig-{plot.name}", plot.caption)
    return (
        f'<figure id="{escape(plot.name)}">\n{svg}\n<figcaption>{escape(plot.caption)} ({links})</figcaption></figure>'
    )


def page(
    title: str, intro: Sequence[str], summary: tuple[View, View], views: Sequence[View], folded: Sequence[View],
    plots: Sequence[Plot],
) -> str:  # fmt: skip
    """The page: intro, the compact and full summary tables, the figures, then ``views`` open and
    ``folded`` behind a click each."""
    paragraphs = "\n".join(f"<p>{escape(line)}</p>" for line in intro)
    figures = "\n".join(figure(p) for p in plots)
    if figures:
        figures = f'<section id="figures"><h2>Figures</h2>\n{figures}\n</section>'
    sections = "\n".join([*(section(v) for v in views), *(section(v, folded=True) for v in folded)])
    return (
        "<!DOCTYPE html>\n"
        f'<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width">'
        f"<title>{escape(title)}</title><style>{STYLE}</style></head>\n<body>\n<h1>{escape(title)}</h1>\n"
        f"{paragraphs}\n{summary_section(*summary)}\n"
        f"{figures}\n{sections}\n"
        f"<script>{SCRIPT}</script>\n</body></html>\n"
    )
