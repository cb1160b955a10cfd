"""Run phase of TrainFail/SPDropoutRNG-v1: launch the pipeline, keep its outputs.

    python /kit/run.py --scenarios /io/scenarios.json --out-dir /out

Untrusted: the revision's code runs in the same sandbox, as the same user, so nothing here is
private and nothing here is a verdict. The protocol's scaffolding (scratch folders, the fresh
copy of the revision, timing records, the group's warm launcher) is the harness library's
``runkit.py``; this file is the case's part: the training run the workspace README documents,
with overrides that pin every setting the judge's step depends on (``pipeline.py``), and what
is kept under ``OUT/<scenario>/``:

* ``metrics.jsonl`` and ``final/tp_rank_XX.pt``: the README's run outputs, copied only if they
  are regular files within a size limit;
* ``observe/rankR.pt``: the observer's per-step weights and dropout masks of every rank;
* ``job.log`` (the last 200 KB of the job's output) and ``timings.json``.

There are no grader-owned inputs: the README's data depend only on ``data.seed``, and the
judge regenerates them itself.
"""
from __future__ import annotations

import functools
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from pipeline import PRELOAD, RunResult, launch_env, overrides, run_pipeline  # noqa: E402 - puts the harness library on sys.path
from scenario import Scenario, read_requests  # noqa: E402

import runkit  # noqa: E402 - from the harness library

METRICS_LIMIT = 4 << 20


def wanted(sc: Scenario) -> list[tuple[str, int]]:
    """The README-documented outputs and the observer records the judge reads (the kit points
    the observer at ``<run_dir>/observe``), each with its size limit."""
    return [("metrics.jsonl", METRICS_LIMIT),
            *[(f"final/tp_rank_{r:02d}.pt", sc.state_limit_bytes) for r in range(sc.tp)],
            *[(f"observe/rank{r}.pt", sc.record_limit_bytes) for r in range(sc.tp)]]


def launch(sc: Scenario, workspace: Path, inputs: Any, out_dir: Path, log_path: Path, warm: Any | None) -> RunResult:
    """The README's training run with the overrides that pin the judge's settings."""
    return run_pipeline(sc, workspace, overrides(sc, out_dir), log_path, out_dir / sc.name / "observe", warm)


KIT = runkit.RunKit(
    "SPDropoutRNG",
    Scenario.from_request,
    functools.partial(runkit.pipeline_scenario, write_fixtures=lambda sc, folder: None, launch=launch, wanted=wanted),
    PRELOAD,
    launch_env,
    read_requests,
)

if __name__ == "__main__":
    runkit.main(KIT)
