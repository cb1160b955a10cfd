"""Run phase of TrainFail/DDPBypassDrift-v1 (untrusted: beside the revision; no verdicts).

    python /kit/run.py --scenarios /io/scenarios.json --out-dir /out

For each scenario: a fresh copy of the revision, the grader's own initial weights and sensor
windows (``fixtures.py``), the README's ``torchrun --standalone --nproc_per_node=W -m
gaitnet.train --config configs/ddp.yaml`` with settings pinning what the judge's objective
depends on (the rank count is torchrun's; ``launch.nproc_per_node`` may say otherwise), the
step observer in every rank, and under ``OUT/<scenario>/`` the README's ``metrics.jsonl`` and
``checkpoints/final.pt``, the observer's ``observe/rank<R>.pt``, ``job.log`` and
``timings.json``. Single scenarios and groups fork their ranks from one warm launcher.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import runkit  # the harness library (on the path in grading sandboxes)
from fixtures import write_windows
from launch import Pipeline, RunResult, dotted, observe_settings
from scenario import Scenario

PIPELINE = Pipeline(
    module="gaitnet.train",
    base_args=("--config", "configs/ddp.yaml"),
    preload=("torch", "torch.distributed", "torch.nn.parallel", "yaml"),
    observers=("replica_steps:start",),
    observer_path=(Path(__file__).resolve().parent / "observe",),
)


def settings(sc: Scenario, checkpoint: Path, dataset: Path, output_dir: Path) -> list[str]:
    """README settings that pin everything the judge's objective depends on."""
    pinned: dict[str, Any] = {
        "run_name": sc.name, "output_dir": output_dir, "launch.nproc_per_node": sc.launch_key_ranks or sc.devices,
        "model.input_dim": sc.input_dim, "model.hidden_size": sc.hidden_size, "model.embed_dim": sc.embed_dim,
        "model.num_classes": sc.num_classes, "model.init_checkpoint": checkpoint, "data.path": dataset,
        "data.global_batch_size": sc.global_batch_size, "train.steps": sc.steps, "train.lr": sc.lr,
        "train.consistency_weight": sc.consistency_weight,
    }
    if sc.log_interval:
        pinned["train.log_interval"] = sc.log_interval
    return dotted(pinned)


def launch(sc: Scenario, workspace: Path, inputs: tuple[Path, Path], out_dir: Path, log: Path,
           warm: Any | None) -> RunResult:  # fmt: skip
    return PIPELINE.run(workspace=workspace, args=settings(sc, *inputs, out_dir), nproc=sc.devices, log_path=log,
                        timeout_s=sc.run_timeout_s, backend=sc.backend, warm=warm,
                        observe=observe_settings(out_dir / sc.name / "observe", sc.steps))


def wanted(sc: Scenario) -> list[tuple[str, int]]:
    """The README's two outputs and every rank's observer record."""
    outputs = [("metrics.jsonl", 4 << 20), ("checkpoints/final.pt", sc.state_limit_bytes)]
    return outputs + runkit.rank_files("observe", sc.devices, sc.record_limit_bytes)


# a single scenario is forked from the warm server too: torch's import dominates a one-scenario
# launch (qualification compares single runs with groups)
KIT = runkit.case_kit("DDPBypassDrift", Scenario.from_request, PIPELINE, fixtures=write_windows, launch=launch,
                      wanted=wanted, warm_alone=True)

if __name__ == "__main__":
    runkit.main(KIT)
