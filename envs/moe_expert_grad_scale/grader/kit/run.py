"""Run phase of TrainFail/MoEExpertGradScale-v0: launch the pipeline, keep its outputs.

    python /kit/run.py --scenarios /io/scenarios.json --out-dir /out

Untrusted: the revision's code runs in the same sandbox, as the same user, so nothing here
is private and nothing here is a verdict. Working directory: the revision. For each
scenario it copies the revision to a fresh folder, writes the grader-owned initial weights
and data there (``fixtures.py``), runs the training the way the workspace README documents
with overrides that pin every setting the judge's reference depends on (``pipeline.py``),
and leaves under ``OUT/<scenario>/``:

* ``metrics.jsonl`` and ``checkpoints/final/rankR.pt``: the README's run outputs, copied only
  if they are regular files within a size limit;
* ``observe/rankR.json``: the layout observer's record of every rank (same rules);
* ``job.log`` and ``timings.json`` (the harness library's ``runkit.py``).

Every launch, a single scenario's too, is forked from one warm launcher (torch and DeepSpeed
imported once); any scenario after the warm launcher failed gets a fresh ``torchrun``. The
protocol's scaffolding is the harness library's ``runkit.py``.
"""
from __future__ import annotations

import shutil
import time
from pathlib import Path
from typing import Any

from fixtures import make_inputs, write_inputs
from pipeline import PRELOAD, launch_env, overrides, run_pipeline  # puts the harness library on sys.path
from scenario import Scenario, read_requests

import runkit  # noqa: E402 - from the harness library

METRICS_LIMIT = 1 << 20
OBSERVE_LIMIT = 64 << 10


def wanted(sc: Scenario) -> list[tuple[str, int]]:
    """The README-documented outputs and the observer records the judge reads, each with its
    size limit."""
    files = [("metrics.jsonl", METRICS_LIMIT)]
    files += [(f"checkpoints/final/rank{r}.pt", sc.state_limit_bytes) for r in range(sc.world)]
    files += [(f"observe/rank{r}.json", OBSERVE_LIMIT) for r in range(sc.world)]
    return files


def run_one(sc: Scenario, source: Path, scratch: Path, dest: Path, launchers: runkit.Launchers) -> dict[str, Any]:
    """Fresh workspace copy -> fixtures -> launch -> collect; the scenario's timings record."""
    t0 = time.time()
    workspace = scratch / "workspace"
    shutil.copytree(source, workspace, symlinks=True)
    files = write_inputs(make_inputs(sc), scratch / "inputs")
    out_dir = scratch / "outputs"
    args, log_path, observe_dir = overrides(sc, files, out_dir), scratch / "job.log", out_dir / sc.name / "observe"
    t1 = time.time()
    run, launcher = launchers.run(lambda warm: run_pipeline(sc, workspace, args, log_path, observe_dir, warm))
    t2 = time.time()
    notes = runkit.collect(out_dir / sc.name, dest, wanted(sc))
    runkit.copy_tail(run.log_path, dest / "job.log", runkit.LOG_LIMIT)
    return {"launcher": launcher, "returncode": run.returncode, "timed_out": run.timed_out,
            "started": run.started, "ended": run.ended, "prepare_s": round(t1 - t0, 3),
            "collect_s": round(time.time() - t2, 3), "notes": notes}


# One scenario too is launched from the warm server: the imports (torch, DeepSpeed) dominate a
# one-scenario launch; qualification still compares one-scenario runs with groups.
KIT = runkit.RunKit(
    "MoEExpertGradScale", Scenario.from_request, run_one, PRELOAD, launch_env, read_requests, warm_alone=True
)

if __name__ == "__main__":
    runkit.main(KIT)
