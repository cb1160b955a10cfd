"""Run phase of TrainFail/DDPTokenAverage-v1 (untrusted: beside the revision; no verdicts).

    python /kit/run.py --scenarios /io/scenarios.json --out-dir /out

Per scenario: a fresh copy of the revision, its records (``sftdata.py``), the README launch with
overrides pinning what the judge's reference depends on and the update recorder on (forked from
one warm launcher), and under ``OUT/<scenario>/`` the recorder's ``records/rank<R>.pt``, the saved
``model.safetensors``, ``job.log`` and ``timings.json`` (``runkit``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import runkit  # the harness library (on the path in grading sandboxes)
from launch import Pipeline, RunResult, dotted
from scenario import Scenario
from sftdata import generate, write_jsonl

CONFIG = "configs/sft_tiny.yaml"
PIPELINE = Pipeline(
    module="sft.train",
    base_args=("--config", CONFIG),
    preload=(
        "torch",
        "torch.distributed",
        "transformers",
        "transformers.trainer",
        "transformers.training_args",
        "transformers.models.gpt_neox.modeling_gpt_neox",
        "yaml",
    ),  # fmt: skip
    observers=("update_recorder:install",),
    observer_path=(Path(__file__).resolve().parent / "observe",),
    env={"HF_HUB_OFFLINE": "1"},
)


def launch(sc: Scenario, workspace: Path, data: Path, out_dir: Path, log: Path, warm: Any | None) -> RunResult:
    run_dir = out_dir / sc.name
    args = dotted({
        "data.train_file": data, "training.per_device_train_batch_size": sc.per_device_batch_size,
        "training.gradient_accumulation_steps": sc.grad_accum, "training.seed": sc.seed,
        "training.max_steps": sc.steps, "training.max_grad_norm": sc.max_grad_norm,
        "training.learning_rate": sc.learning_rate, "training.weight_decay": sc.weight_decay,
        "training.lr_scheduler_type": sc.lr_scheduler_type, "training.warmup_steps": sc.warmup_steps,
        "training.output_dir": run_dir, "model.config": f"configs/neox_{sc.architecture}.json",
    })  # fmt: skip
    observe = {"TRAINFAIL_OBSERVE_DIR": str(run_dir / "records"), "TRAINFAIL_OBSERVE_STEPS": str(sc.steps)}
    return PIPELINE.run(workspace=workspace, args=args, nproc=sc.world_size, log_path=log,
                        timeout_s=sc.run_timeout_s, backend=sc.backend, warm=warm, observe=observe)  # fmt: skip


def wanted(sc: Scenario) -> list[tuple[str, int]]:
    records = [(f"records/rank{r}.pt", sc.record_limit_bytes) for r in range(sc.world_size)]
    return [*records, ("model.safetensors", sc.record_limit_bytes)]


# a single scenario is forked from the warm server too: torch and Transformers' imports dominate it
KIT = runkit.case_kit("DDPTokenAverage", Scenario.from_request, PIPELINE,
                      fixtures=lambda sc, folder: write_jsonl(generate(sc), folder / "train.jsonl"),
                      launch=launch, wanted=wanted, warm_alone=True)  # fmt: skip

if __name__ == "__main__":
    runkit.main(KIT)
