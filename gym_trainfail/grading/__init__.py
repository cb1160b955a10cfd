"""Private grading: replay a revision on every frozen scenario, in two phases that never meet.

* :mod:`.receipts`: what grading produces (one outcome per scenario, a receipt per revision
  tree, the first valid repair);
* :mod:`.phases`: the sandboxed run and judge phases, and what the host checks between them;
* :mod:`.oracles`: revision-independent references and run-phase fixtures, computed once and
  cached;
* :mod:`.grader`: the :class:`Grader`: plans launch units, runs them, retries what got no
  verdict, keeps receipts.

The protocol is ``docs/grader-protocol.md``.
"""

from __future__ import annotations

from gym_trainfail.grading.grader import DEFAULT_RETRIES, GRADING_ARM, Grader, Job, ProgressHook
from gym_trainfail.grading.oracles import ORACLE_DONE, FixtureCache, OracleCache
from gym_trainfail.grading.phases import (
    FIXTURES_MOUNT,
    GRADER_LIMITS,
    HARNESSLIB_DIR,
    ArtifactCheck,
    harnesslib_digest,
    sanitize_artifacts,
)
from gym_trainfail.grading.receipts import (
    NOT_RUNNABLE,
    FirstValid,
    Receipt,
    ScenarioOutcome,
    Status,
    first_valid,
    not_runnable,
)

__all__ = [
    "DEFAULT_RETRIES",
    "FIXTURES_MOUNT",
    "GRADER_LIMITS",
    "GRADING_ARM",
    "HARNESSLIB_DIR",
    "NOT_RUNNABLE",
    "ORACLE_DONE",
    "ArtifactCheck",
    "FirstValid",
    "FixtureCache",
    "Grader",
    "Job",
    "OracleCache",
    "ProgressHook",
    "Receipt",
    "ScenarioOutcome",
    "Status",
    "first_valid",
    "harnesslib_digest",
    "not_runnable",
    "sanitize_artifacts",
]
