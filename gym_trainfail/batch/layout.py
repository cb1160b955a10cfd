"""Where each stage of a batch keeps its files inside the run directory.

Stages hand off through files only, so any stage can be re-run without the ones before it::

    RUN_DIR/
      plan.json                      the plan (written first)
      status/<episode>.json          attempts of each episode (the runner's bookkeeping)
      episodes/<episode>/            the episode's run directory (ledger, revisions, objects)
      attempts/<episode>/<n>/        what a failed attempt left behind, moved aside before a retry
      grades/receipts/<case>/<tree>.json   one receipt per distinct (case, revision tree)
      grades/grading.json            the grade stage's report (dedup, grader device-seconds)
      adjudication/<episode>.json    per-episode verdicts and costs (what leaderboards read)
      adjudication/<episode>/revision-<n>.diff   revision source maps
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

PLAN_FILE = "plan.json"


def case_slug(case_id: str) -> str:
    """A case id as a file name (``TrainFail/X-v0`` → ``TrainFail__X-v0``)."""
    return case_id.replace("/", "__")


@dataclass(frozen=True)
class RunLayout:
    """Paths of one batch run directory."""

    root: Path

    @property
    def plan(self) -> Path:
        """The plan, written before any episode runs."""
        return self.root / PLAN_FILE

    def status(self, episode: str) -> Path:
        """The runner's record of an episode's attempts."""
        return self.root / "status" / f"{episode}.json"

    def episode(self, episode: str) -> Path:
        """The episode's run directory (as :func:`~gym_trainfail.episode.run_episode` makes it)."""
        return self.root / "episodes" / episode

    def attempt(self, episode: str, number: int) -> Path:
        """Where attempt ``number`` of an episode keeps its worker result and leftovers."""
        return self.root / "attempts" / episode / str(number)

    def receipt(self, case_id: str, tree: str) -> Path:
        """The batch's receipt for one revision tree of one case."""
        return self.root / "grades" / "receipts" / case_slug(case_id) / f"{tree}.json"

    @property
    def grading_report(self) -> Path:
        """The grade stage's report."""
        return self.root / "grades" / "grading.json"

    def adjudication(self, episode: str) -> Path:
        """An episode's adjudication (what leaderboards read)."""
        return self.root / "adjudication" / f"{episode}.json"

    def source_map(self, episode: str, revision: int) -> Path:
        """The unified diff of a revision against the case's original workspace."""
        return self.root / "adjudication" / episode / f"revision-{revision}.diff"
