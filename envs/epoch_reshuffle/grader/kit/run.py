"""Run phase of TrainFail/EpochReshuffle-v1 (untrusted: beside the revision; no verdicts).

    python /kit/run.py --scenarios /io/scenarios.json --out-dir /out

Per scenario: a fresh copy of the revision, the grader's table and starting weights
(``fixtures.py``), one launch of ``wristnet.fit`` the way the README runs it, with every setting
the judge's replay depends on pinned by ``--set`` and the batch tap on in every rank. Under
``OUT/<scenario>/``: ``model.pt`` (the README's output), ``tap/rankR.pt``, ``job.log`` and
``timings.json``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import fixtures
import runkit  # the harness library (on the path in grading sandboxes)
from launch import Pipeline, RunResult, dotted, observe_settings
from scenario import Scenario

PIPELINE = Pipeline(
    module="wristnet.fit",
    base_args=("--config", "configs/cpu.toml"),
    # torch._dynamo: the optimizer's first step imports it, otherwise once per rank
    preload=("torch", "torch.distributed", "torch.nn.parallel", "torch.optim", "torch._dynamo", "tomllib"),
    observers=("batch_tap:install",),
    observer_path=(Path(__file__).resolve().parent / "observe",),
)


def settings(sc: Scenario, table: Path, init: Path, out_dir: Path) -> list[str]:
    """``--set`` pairs for the README's keys (never ``run.nproc``: ranks are the process group's)."""
    values: dict[str, Any] = {
        "data.table": f'"{table}"', "data.rows": sc.rows, "data.features": sc.features,
        "data.classes": sc.classes, "data.batch_size": sc.batch_size, "data.shuffle_seed": sc.shuffle_seed,
        "data.drop_last": sc.drop_last, "model.hidden": sc.hidden, "model.init": f'"{init}"',
        "train.epochs": sc.epochs, "train.lr": sc.lr, "train.momentum": sc.momentum,
        "run.name": f'"{sc.name}"', "run.out_dir": f'"{out_dir}"',
    }  # fmt: skip
    return [part for pair in dotted(values) for part in ("--set", pair)]


def launch(sc: Scenario, workspace: Path, inputs: tuple[Path, Path], out_dir: Path, log: Path,
           warm: Any | None) -> RunResult:  # fmt: skip
    table, init = inputs
    tap = observe_settings(out_dir / sc.name / "tap", sc.steps)
    return PIPELINE.run(workspace=workspace, args=settings(sc, table, init, out_dir), nproc=sc.ranks,
                        log_path=log, timeout_s=sc.run_timeout_s, backend=sc.backend, warm=warm,
                        observe=tap)  # fmt: skip


def wanted(sc: Scenario) -> list[tuple[str, int]]:
    return [("model.pt", sc.state_limit_bytes), *runkit.rank_files("tap", sc.ranks, sc.record_limit_bytes)]


KIT = runkit.case_kit("EpochReshuffle", Scenario.from_request, PIPELINE,
                      fixtures=lambda sc, folder: fixtures.write(sc, folder), launch=launch, wanted=wanted)  # fmt: skip

if __name__ == "__main__":
    runkit.main(KIT)
