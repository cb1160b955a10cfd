"""Run phase of TrainFail/ShardLocalClipNorm-v1: untrusted, it runs beside the revision and
decides nothing.

    python /kit/run.py --scenarios /io/scenarios.json --out-dir /out

Per scenario: a fresh copy of the revision, the grader's own GearNet weights and sensor windows
(``fixtures.py``), then the README's launch (``torchrun -m gearsense.loop --recipe
recipes/default.json``) with one flag per recipe field the judge's replay depends on, the rank
count left to torchrun, and the shard probe started in every rank. ``OUT/<scenario>/`` keeps
``metrics.jsonl``, ``model.pt``, the probe's ``observe/rank<R>.pt``, ``job.log`` and
``timings.json``. Scenarios of one device count share a warm launcher.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from fixtures import write_inputs
from scenario import Scenario

import runkit  # the harness library
from launch import Pipeline, RunResult, observe_settings

KIT_DIR = Path(__file__).resolve().parent
PIPELINE = Pipeline(module="gearsense.loop", base_args=("--recipe", "recipes/default.json"),
                    preload=("torch", "torch.distributed", "torch.distributed.fsdp"),
                    observers=("shard_probe:start",), observer_path=(KIT_DIR / "observe",))


def flags(sc: Scenario, inputs: tuple[Path, Path], out_dir: Path) -> list[str]:
    """The loop's flags for every recipe field the judge's replay reads."""
    weights, data = inputs
    pinned = {
        "seed": sc.seed, "data-file": data, "init": weights, "channels": sc.channels, "width": sc.width,
        "classes": sc.classes, "window": sc.window, "rows-per-rank": sc.rows_per_rank,
        "accum-steps": sc.accum_steps, "steps": sc.steps, "lr": sc.lr, "max-grad-norm": sc.max_grad_norm,
        "norm-type": sc.norm_type, "out-dir": out_dir / sc.name,
    }
    return [item for key, value in pinned.items() for item in (f"--{key}", str(value))]


def launch(sc: Scenario, workspace: Path, inputs: tuple[Path, Path], out_dir: Path, log: Path,
           warm: Any | None) -> RunResult:  # fmt: skip
    records = out_dir / sc.name / "observe"
    return PIPELINE.run(workspace=workspace, args=flags(sc, inputs, out_dir), nproc=sc.devices, log_path=log,
                        timeout_s=sc.run_timeout_s, backend=sc.backend, warm=warm,
                        observe=observe_settings(records, sc.steps))


KIT = runkit.case_kit(
    "ShardLocalClipNorm", Scenario.from_request, PIPELINE, fixtures=write_inputs, launch=launch,
    wanted=lambda sc: [("model.pt", 1 << 20), ("metrics.jsonl", 1 << 20),
                       *runkit.rank_files("observe", sc.devices, 1 << 20)],
)

if __name__ == "__main__":
    runkit.main(KIT)
