"""Run phase of TrainFail/ResumeSkipBatches-v0: launch the pipeline, interrupt it, resume it.

    python /kit/run.py --scenarios /io/scenarios.json --out-dir /out

Untrusted: the revision's code runs in the same sandbox, as the same user, so nothing here is
private and nothing here is a verdict. Working directory: the revision. For each scenario it
copies the revision to a fresh folder, writes the grader-owned table and warm start there
(``fixtures.py``), and runs the training the way the workspace README documents, in segments:
``train.max_steps=K1`` from the warm start, then ``train.resume_from_checkpoint=.../checkpoint-K1``
with ``train.max_steps=K2``, and so on to the scenario's last step. It leaves under
``OUT/<scenario>/``:

* ``checkpoint-K/model.pt`` for every interruption point and the last step (the README's
  checkpoint layout), copied only if regular files within a size limit;
* ``observe/segS/rankR.bin``: the observer's record of the rows each rank's forwards consumed
  during launch ``S`` (same rules);
* ``job.log``: the last 200 KB of the launches' combined output;
* ``timings.json``: how each launch ended and how long it took.

The first launch that fails ends the scenario (its later segments could only resume from
nothing).
"""
from __future__ import annotations

import shutil
import time
from pathlib import Path
from typing import Any

from fixtures import make_inputs, write_inputs
from pipeline import PRELOAD, launch_env, overrides, run_launch  # puts the harness library on sys.path
from scenario import Scenario, read_requests

import runkit  # noqa: E402 - from the harness library


def collect(sc: Scenario, run_dir: Path, observe_root: Path, dest: Path, segments_run: int) -> list[str]:
    """Copy the checkpoints' models and the observer records the judge reads."""
    wanted: list[tuple[Path, Path, int]] = []
    for index, (_, stop) in enumerate(sc.segments[:segments_run]):
        wanted.append((run_dir / f"checkpoint-{stop}" / "model.pt", dest / f"checkpoint-{stop}" / "model.pt",
                       sc.state_limit_bytes))
        for rank in range(sc.world_size):
            wanted.append((observe_root / f"seg{index}" / f"rank{rank}.bin",
                           dest / "observe" / f"seg{index}" / f"rank{rank}.bin", sc.record_limit_bytes))
    notes = []
    for src, target, limit in wanted:
        if any(p.is_symlink() for p in [src.parent, src.parent.parent]):
            notes.append(f"{src}: a folder on its path is a link")
            continue
        note = runkit.copy_regular(src, target, limit)
        if note is not None:
            notes.append(f"{src.parent.name}/{note}")
    return notes


def run_one(sc: Scenario, source: Path, scratch: Path, dest: Path, launchers: runkit.Launchers) -> dict[str, Any]:
    """Fresh workspace copy -> inputs -> one launch per segment -> collect."""
    t0 = time.time()
    workspace = scratch / "workspace"
    shutil.copytree(source, workspace, symlinks=True)
    files = write_inputs(make_inputs(sc), scratch / "inputs")
    out_dir = scratch / "outputs"
    log_path = scratch / "job.log"
    launches = []
    how = "cold"
    for index, (start, stop) in enumerate(sc.segments):
        args = overrides(sc, files, out_dir, stop, start)
        with log_path.open("a", encoding="utf-8") as fh:
            fh.write(f"=== launch {index}: steps {start} -> {stop}\n")
        observe_dir = scratch / "observe" / f"seg{index}"
        run, how = launchers.run(lambda warm, a=args, o=observe_dir: run_launch(sc, workspace, a, log_path, o, warm))
        launches.append({"segment": index, "returncode": run.returncode, "timed_out": run.timed_out,
                         "started": run.started, "ended": run.ended})
        if run.returncode != 0:
            break
    t1 = time.time()
    notes = collect(sc, out_dir / sc.name, scratch / "observe", dest, len(launches))
    runkit.copy_tail(log_path, dest / "job.log", runkit.LOG_LIMIT)
    return {"launcher": how, "launches": launches, "run_s": round(t1 - t0, 3), "notes": notes}


KIT = runkit.RunKit(
    "ResumeSkipBatches", Scenario.from_request, run_one, PRELOAD, launch_env, read_requests, warm_alone=True
)

if __name__ == "__main__":
    runkit.main(KIT)
