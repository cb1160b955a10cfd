"""A rich progress bar for the episode stage: episodes done, running, failed (and, when the output
is not a terminal, a line per finished episode)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from gym_trainfail.batch.driver import Counts
from gym_trainfail.batch.driver import Progress as ProgressHook


def describe(counts: Counts) -> str:
    """``3 running · 1 failed · 0 gave up · 2 skipped`` (failed = infrastructure failures, retried)."""
    return (
        f"{counts.running} running · {counts.failed} failed · {counts.gave_up} gave up · {counts.skipped} already done"
    )


@contextlib.contextmanager
def episode_progress(console: Console, total: int) -> Iterator[ProgressHook]:
    """``with episode_progress(console, n) as hook:`` — pass ``hook`` to the driver."""
    columns = (
        TextColumn("episodes"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[state]}"),
        TimeElapsedColumn(),
    )
    with Progress(*columns, console=console, transient=False) as bar:
        task = bar.add_task("episodes", total=total, state="")

        finished = -1

        def hook(counts: Counts, line: str) -> None:
            nonlocal finished
            bar.update(task, completed=counts.done + counts.gave_up, state=describe(counts))
            if line:
                bar.console.print(line, markup=False, highlight=False)
            # Not a terminal (a log file, CI): the bar is drawn only at the end, so say each
            # finished episode as a line of its own.
            if not console.is_terminal and counts.done + counts.gave_up != finished:
                finished = counts.done + counts.gave_up
                bar.console.print(f"episodes {finished}/{total} · {describe(counts)}", markup=False, highlight=False)

        yield hook
