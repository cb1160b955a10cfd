"""Run phase of TrainFail/SchedulerPerProcess-v1 (untrusted: beside the revision; no verdicts).

    python /kit/run.py --scenarios /io/scenarios.json --out-dir /out

For each scenario: a fresh copy of the revision, the grader's own initial weights and data
(``fixtures.py``), the README's training run (``torchrun -m demandnet.train --config
configs/train.yaml`` with overrides pinning every setting the judge's reference depends on;
scenario groups and single scenarios fork their ranks from one warm launcher), and under
``OUT/<scenario>/`` the README's outputs ``metrics.jsonl`` and ``final/model.pt`` (regular
files within a size limit), ``job.log`` and ``timings.json`` (``runkit``).
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import runkit  # the harness library (on the path in grading sandboxes)
from fixtures import InputFiles, make_inputs, write_inputs
from launch import Pipeline, RunResult, dotted
from scenario import Scenario

PIPELINE = Pipeline(
    module="demandnet.train",
    base_args=("--config", "configs/train.yaml"),
    preload=("torch", "torch.distributed", "accelerate", "transformers", "transformers.optimization", "yaml"),
)


def overrides(sc: Scenario, files: InputFiles, output_dir: Path) -> list[str]:
    """README config keys that pin everything the reference depends on."""
    return dotted({
        "run_name": sc.name, "output_dir": output_dir, "processes": sc.processes,
        "model.input_dim": sc.input_dim, "model.hidden_size": sc.hidden_size, "model.output_dim": sc.output_dim,
        "model.init_checkpoint": files.init_path, "data.path": files.data_path,
        "data.per_device_batch_size": sc.per_device_batch_size, "train.epochs": sc.epochs,
        "train.gradient_accumulation_steps": sc.gradient_accumulation_steps, "train.lr": sc.lr,
        "train.momentum": sc.momentum, "train.lr_scheduler_type": sc.lr_scheduler_type,
        "train.warmup_steps": sc.warmup_steps, "train.scheduler_kwargs": json.dumps(sc.scheduler_kwargs, sort_keys=True),
    })


def launch(sc: Scenario, workspace: Path, files: InputFiles, out_dir: Path, log: Path, warm: Any | None) -> RunResult:
    return PIPELINE.run(workspace=workspace, args=overrides(sc, files, out_dir), nproc=sc.processes, log_path=log,
                        timeout_s=sc.run_timeout_s, backend=sc.backend, warm=warm)


def wanted(sc: Scenario) -> list[tuple[str, int]]:
    return [("metrics.jsonl", 4 << 20), ("final/model.pt", sc.state_limit_bytes)]


# a single scenario is forked from the warm server too: torch, Accelerate and transformers'
# imports dominate a one-scenario launch (qualification compares single runs with groups)
KIT = runkit.case_kit("SchedulerPerProcess", Scenario.from_request, PIPELINE,
                      fixtures=lambda sc, folder: write_inputs(make_inputs(sc), folder),
                      launch=launch, wanted=wanted, warm_alone=True)

if __name__ == "__main__":
    runkit.main(KIT)
