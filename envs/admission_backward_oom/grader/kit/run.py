"""Run phase of TrainFail/AdmissionBackwardOOM-v2 (untrusted: beside the revision; no verdicts).

    python /kit/run.py --scenarios /io/scenarios.json --out-dir /out

For each scenario, on a fresh copy of the revision: its calls written as the README's
``calls.json`` (``scenario.py``; one file per ``files``), then the README's ``python -m
packrl.serve --calls FILE --out FILE [--calls FILE --out FILE]`` in a process forked from the
harness library's warm launcher (torch imported once; a fresh interpreter when it cannot
start). Under ``OUT/<scenario>/``: ``results-<k>.jsonl``, ``job.log``, ``timings.json``.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import runkit  # the harness library (on the path in grading sandboxes)
from launch import Pipeline, RunResult
from scenario import Scenario

PIPELINE = Pipeline(module="packrl.serve", preload=("torch", "torch.utils.checkpoint", "torch.nn.functional"))
RESULTS_LIMIT = 4 << 20


def write_calls(sc: Scenario, folder: Path) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    files = [folder / f"calls-{k}.json" for k in range(sc.files)]
    for path, spec in zip(files, sc.specs(), strict=True):
        path.write_text(json.dumps(spec), encoding="utf-8")
    return files


def launch(sc: Scenario, workspace: Path, files: list[Path], out_dir: Path, log: Path, warm: Any | None) -> RunResult:
    outs = [out_dir / sc.name / f"results-{k}.jsonl" for k in range(sc.files)]
    args = [a for f, o in zip(files, outs, strict=True) for a in ("--calls", str(f), "--out", str(o))]
    cold = None if warm is not None else [sys.executable, "-m", PIPELINE.module, *args]
    return PIPELINE.run(workspace=workspace, args=args, nproc=1, log_path=log, timeout_s=sc.run_timeout_s,
                        backend=sc.backend, warm=warm, argv=cold)  # fmt: skip


def wanted(sc: Scenario) -> list[tuple[str, int]]:
    return [(f"results-{k}.jsonl", RESULTS_LIMIT) for k in range(sc.files)]


# a single scenario is forked from the warm server too: importing torch dominates a small one
KIT = runkit.case_kit("AdmissionBackwardOOM", Scenario.from_request, PIPELINE, fixtures=write_calls, launch=launch,
                      wanted=wanted, warm_alone=True)  # fmt: skip

if __name__ == "__main__":
    runkit.main(KIT)
