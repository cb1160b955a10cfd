"""Run phase of TrainFail/ScalerInfSync-v1 (untrusted: it runs beside the revision; no verdicts).

    python /kit/run.py --scenarios /io/scenarios.json --out-dir /out

For each scenario: a fresh copy of the revision, the grader's own initial weights and table
(``fixtures.py``), the README's run (``torchrun -m twinhead.train --config configs/base.toml``
with overrides pinning every setting the judge's replay depends on; the rank count is
torchrun's), the step probe in every rank, and under ``OUT/<scenario>/`` the README's
``rank<R>.jsonl`` and ``model.pt``, the probe's ``observe/rank<R>.pt``, ``job.log`` and
``timings.json``. Scenario groups fork their ranks from one warm launcher.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import runkit  # the harness library
from fixtures import write_inputs
from launch import Pipeline, RunResult, dotted, observe_settings
from scenario import Scenario

PIPELINE = Pipeline(
    "twinhead.train", ("--config", "configs/base.toml"),
    ("torch", "torch.distributed", "torch.distributed.fsdp"),
    observer_path=(Path(__file__).resolve().parent / "observe",), observers=("step_probe:start",),
)


def overrides(sc: Scenario, weights: Path, data: Path, out_dir: Path) -> list[str]:
    return dotted({
        "seed": sc.seed, "model.features": sc.features, "model.hidden": sc.hidden, "model.init": weights,
        "data.path": data, "data.rows_per_rank": sc.rows_per_rank, "train.steps": sc.steps, "train.lr": sc.lr,
        "scaler.init_scale": sc.init_scale, "scaler.growth_factor": sc.growth_factor,
        "scaler.backoff_factor": sc.backoff_factor, "scaler.growth_interval": sc.growth_interval,
        "output.dir": out_dir / sc.name,
    })


def launch(sc: Scenario, workspace: Path, inputs: tuple[Path, Path], out_dir: Path, log: Path,
           warm: Any | None) -> RunResult:  # fmt: skip
    records = out_dir / sc.name / "observe"
    return PIPELINE.run(workspace=workspace, args=overrides(sc, *inputs, out_dir), nproc=sc.devices, log_path=log,
                        timeout_s=sc.run_timeout_s, backend=sc.backend, warm=warm,
                        observe=observe_settings(records, sc.steps))


KIT = runkit.case_kit(
    "ScalerInfSync", Scenario.from_request, PIPELINE, fixtures=write_inputs, launch=launch, warm_alone=True,
    wanted=lambda sc: [("model.pt", 1 << 20), *[(f"rank{r}.jsonl", 1 << 20) for r in range(sc.devices)],
                       *runkit.rank_files("observe", sc.devices, 1 << 20)],
)

if __name__ == "__main__":
    runkit.main(KIT)
