"""Run phase of TrainFail/TPClipGradNorm-v0: launch the pipeline, keep its outputs.

    python /kit/run.py --scenarios /io/scenarios.json --out-dir /out

Untrusted: the revision's code runs in the same sandbox, as the same user, so nothing here
is private and nothing here is a verdict. Working directory: the revision. For each
scenario it copies the revision to a fresh folder, writes the grader-owned initial weights
and data there (``fixtures.py``), runs the training the way the workspace README documents
with overrides that pin every setting the judge's reference depends on (``pipeline.py``),
and leaves under ``OUT/<scenario>/``:

* ``metrics.jsonl`` and ``checkpoints/final/mp_rank_XX_model_states.pt``: the README's run
  outputs, copied only if they are regular files within a size limit;
* ``job.log``: the last 200 KB of the job's combined output;
* ``timings.json``: how the launch ended (exit code, time-out) and how long each part took.

Every launch, a single scenario's too, is forked from one warm launcher (torch, DeepSpeed and
megatron-core imported once); any scenario after the warm launcher failed gets a fresh
``torchrun``. The protocol's scaffolding is the harness library's ``runkit.py``.
"""
from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

from fixtures import make_inputs, write_inputs
from pipeline import PRELOAD, launch_env, overrides, run_pipeline  # puts the harness library on sys.path
from scenario import Scenario, read_requests

import runkit  # noqa: E402 - from the harness library

METRICS_LIMIT = 4 << 20


def wanted(sc: Scenario) -> list[tuple[str, int]]:
    """The README-documented outputs the judge reads, each with its size limit."""
    return [("metrics.jsonl", METRICS_LIMIT), *[(f"checkpoints/final/mp_rank_{r:02d}_model_states.pt", sc.state_limit_bytes) for r in range(sc.tp)]]


def launch(sc: Scenario, workspace: Path, files: Any, out_dir: Path, log_path: Path, warm: Any | None) -> Any:
    """The README's training run with the overrides that pin the judge's settings."""
    return run_pipeline(sc, workspace, overrides(sc, files, out_dir), log_path, warm)


KIT = runkit.RunKit(
    "TPClipGradNorm",
    Scenario.from_request,
    functools.partial(
        runkit.pipeline_scenario,
        write_fixtures=lambda sc, folder: write_inputs(make_inputs(sc), folder),
        launch=launch,
        wanted=wanted,
    ),
    PRELOAD,
    launch_env,
    read_requests,
    # one scenario too is launched from the warm server: the imports (torch, DeepSpeed,
    # megatron-core) dominate a one-scenario launch; qualification still compares one-scenario
    # runs with groups
    warm_alone=True,
)

if __name__ == "__main__":
    runkit.main(KIT)
