"""Run phase of @CASE_ID@ (untrusted: it runs beside the revision's code; no verdicts).

    python /kit/run.py --scenarios /io/scenarios.json --out-dir /out

For each scenario, a fresh copy of the revision runs the way its README says (``torchrun``, or
ranks forked from one warm launcher for a group) and ``OUT/<scenario>/`` keeps the README's
output ``metrics.json`` (a regular file within a size limit), ``job.log`` and ``timings.json``.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import runkit  # the harness library
from launch import Pipeline, RunResult
from scenario import Scenario

PIPELINE = Pipeline(module="train", preload=("torch", "torch.distributed"))


def launch(sc: Scenario, workspace: Path, inputs: Any, out_dir: Path, log: Path, warm: Any | None) -> RunResult:
    """``torchrun --nproc_per_node=N train.py --seed S --out ...`` (as ``run.sh`` does)."""
    args = ["--seed", str(sc.seed), "--out", str(out_dir / sc.name / "metrics.json")]
    return PIPELINE.run(workspace=workspace, args=args, nproc=sc.world_size, log_path=log,
                        timeout_s=sc.run_timeout_s, backend=sc.backend, warm=warm)


KIT = runkit.case_kit("@NAME@", Scenario.from_request, PIPELINE, fixtures=lambda sc, folder: None,
                      launch=launch, wanted=lambda sc: [("metrics.json", 64 << 10)])

if __name__ == "__main__":
    runkit.main(KIT)
