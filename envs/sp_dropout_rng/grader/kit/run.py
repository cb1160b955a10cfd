"""Run phase of TrainFail/SPDropoutRNG-v0: launch the pipeline, keep its outputs.

    python /kit/run.py --scenarios /io/scenarios.json --out-dir /out

Untrusted: the revision's code runs in the same sandbox, as the same user, so nothing here is
private and nothing here is a verdict. The protocol's scaffolding (scratch folders, timing
records, the group's warm launcher) is the harness library's ``runkit``; this file is the case's
part. For each scenario it copies the revision to a fresh folder, runs the training the way the
workspace README documents with overrides that pin every setting the judge's step depends on
(``pipeline.py``), and leaves under ``OUT/<scenario>/``:

* ``metrics.jsonl`` and ``final/tp_rank_XX.pt``: the README's run outputs, copied only if they
  are regular files within a size limit;
* ``observe/rankR.pt``: the observer's per-step weights and dropout masks of every rank;
* ``job.log`` (the last 200 KB of the job's output) and ``timings.json``.
"""
from __future__ import annotations

import shutil
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from harness import add_to_path  # noqa: E402

add_to_path()
import runkit  # noqa: E402
from pipeline import PRELOAD, launch_env, overrides, run_pipeline  # noqa: E402
from scenario import Scenario, read_requests  # noqa: E402

METRICS_LIMIT = 4 << 20


def run_one(sc: Scenario, source: Path, scratch: Path, dest: Path, launchers: runkit.Launchers) -> dict[str, Any]:
    """Fresh workspace copy -> launch -> collect; the scenario's timings record."""
    t0 = time.time()
    workspace = scratch / "workspace"
    shutil.copytree(source, workspace, symlinks=True, ignore=shutil.ignore_patterns("outputs"))
    out_dir = scratch / "outputs"
    run_dir = out_dir / sc.name
    log_path = scratch / "job.log"
    t1 = time.time()
    ended, launcher = launchers.run(
        lambda warm: run_pipeline(sc, workspace, overrides(sc, out_dir), log_path, run_dir / "observe", warm))
    t2 = time.time()
    wanted = [("metrics.jsonl", METRICS_LIMIT)]
    wanted += [(f"final/tp_rank_{r:02d}.pt", sc.state_limit_bytes) for r in range(sc.tp)]
    wanted += [(f"observe/rank{r}.pt", sc.record_limit_bytes) for r in range(sc.tp)]
    notes = runkit.collect(run_dir, dest, wanted)
    runkit.copy_tail(log_path, dest / "job.log", runkit.LOG_LIMIT)
    return {"launcher": launcher, "returncode": ended.returncode, "timed_out": ended.timed_out,
            "started": ended.started, "ended": ended.ended, "prepare_s": round(t1 - t0, 3),
            "collect_s": round(time.time() - t2, 3), "notes": notes}


KIT = runkit.RunKit(name="SPDropoutRNG", scenario=Scenario.from_request, run_one=run_one, preload=PRELOAD,
                    launch_env=launch_env, read_requests=read_requests)

if __name__ == "__main__":
    runkit.main(KIT)
