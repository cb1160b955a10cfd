"""Run phase of TrainFail/StaleOptimizerParams-v1 (untrusted: beside the revision; no verdicts).

    python /kit/run.py --scenarios /io/scenarios.json --out-dir /out

For each scenario: a fresh copy of the revision, the grader's own initial weights and table
(``fixtures.py``), the README's run (``torchrun -m pulsenet.train --config configs/train.toml``
with overrides pinning every setting the judge's reference depends on; the rank count is
torchrun's), the holding probe in every rank, and under ``OUT/<scenario>/`` the README's
``metrics.jsonl`` and ``model.pt``, the probe's ``observe/rank<R>.pt``, ``job.log`` and
``timings.json``. Scenario groups fork their ranks from one warm launcher.
"""
from __future__ import annotations

from pathlib import Path

import launch as sdk_launch  # the harness library
import runkit
from fixtures import write_inputs
from scenario import Scenario

HERE = Path(__file__).resolve().parent

PIPELINE = sdk_launch.Pipeline(
    module="pulsenet.train",
    base_args=("--config", "configs/train.toml"),
    preload=("torch", "torch.distributed", "torch.distributed.fsdp", "torch.distributed.tensor"),
    observers=("holding_probe:start",),
    observer_path=(HERE / "observe",),
)


def overrides(sc: Scenario, weights: Path, table: Path, out_dir: Path) -> list[str]:
    return sdk_launch.dotted({
        "run.seed": sc.seed, "run.steps": sc.steps, "run.out": out_dir / sc.name,
        "data.table": table, "data.per_rank": sc.per_rank,
        "model.features": sc.features, "model.width": sc.width, "model.blocks": sc.blocks,
        "model.classes": sc.classes, "model.weights": weights,
        "optim.name": sc.optim, "optim.lr": sc.lr, "optim.weight_decay": sc.weight_decay,
        "optim.momentum": sc.momentum, "finetune.trainable": sc.trainable,
    })


def start(sc: Scenario, workspace: Path, inputs, out_dir: Path, log: Path, warm):
    """One launch of the README's run for ``sc``, the probe recording under ``observe/``."""
    weights, table = inputs
    probe = sdk_launch.observe_settings(out_dir / sc.name / "observe", sc.steps)
    args = overrides(sc, weights, table, out_dir)
    return PIPELINE.run(workspace=workspace, args=args, nproc=sc.devices, log_path=log, backend=sc.backend,
                        timeout_s=sc.run_timeout_s, warm=warm, observe=probe)


KIT = runkit.case_kit(
    "StaleOptimizerParams", Scenario.from_request, PIPELINE, fixtures=write_inputs, launch=start,
    wanted=lambda sc: [("model.pt", 1 << 20), ("metrics.jsonl", 1 << 20),
                       *runkit.rank_files("observe", sc.devices, 1 << 20)],
)

if __name__ == "__main__":
    runkit.main(KIT)
