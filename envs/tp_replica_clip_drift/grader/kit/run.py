"""Run phase of TrainFail/TPReplicaClipDrift-v1 (untrusted: beside the revision; no verdicts).

    python /kit/run.py --scenarios /io/scenarios.json --out-dir /out

``runkit.case_kit`` does the protocol; this kit says how one scenario runs: the grader's inputs
(``fixtures.py``), ``torchrun -m emulator.train --config configs/tp2.yaml`` with README-key
overrides for everything the judge's reference depends on (ranks forked from a warm launcher
that imported torch, DeepSpeed and megatron-core once), the observer ``observe/replica_masters.py``
started in every rank, and what the judge reads: ``metrics.jsonl``,
``checkpoints/final/mp_rank_XX_model_states.pt`` and the observer's ``observe/rank<R>.pt``.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import runkit  # the harness library
from fixtures import save
from launch import Pipeline, RunResult, dotted, observe_settings
from scenario import Scenario

PIPELINE = Pipeline(
    module="emulator.train",
    base_args=("--config", "configs/tp2.yaml"),
    preload=("torch", "torch.distributed", "deepspeed", "deepspeed.runtime.bf16_optimizer", "megatron.core",
             "megatron.core.parallel_state", "megatron.core.tensor_parallel", "yaml"),
    observers=("replica_masters:install",),
    observer_path=(Path(__file__).resolve().parent / "observe",),
)


def launch(sc: Scenario, workspace: Path, inputs: dict[str, Path], out_dir: Path, log: Path,
           warm: Any | None) -> RunResult:  # fmt: skip
    readme_keys = {
        "run_name": sc.name, "output_dir": out_dir, "parallel.tensor_model_parallel_size": sc.tp,
        "model.input_dim": sc.input_dim, "model.hidden_size": sc.hidden_size,
        "model.ffn_hidden_size": sc.ffn_hidden_size, "model.num_layers": sc.num_layers,
        "model.output_dim": sc.output_dim, "model.init_checkpoint": inputs["init"],
        "data.path": inputs["data"], "data.batch_size": sc.batch_size, "train.steps": sc.steps,
        "train.lr": sc.lr, "train.log_interval": sc.log_interval, "deepspeed.bf16": sc.bf16,
        "deepspeed.zero_stage": sc.zero_stage, "deepspeed.gradient_clipping": sc.max_norm,
    }
    observe = observe_settings(out_dir / sc.name / "observe", sc.steps, full_every=sc.full_record_every)
    return PIPELINE.run(workspace=workspace, args=dotted(readme_keys), nproc=sc.tp, log_path=log,
                        timeout_s=sc.run_timeout_s, backend=sc.backend, warm=warm, observe=observe)


def wanted(sc: Scenario) -> list[tuple[str, int]]:
    saved = [(f"checkpoints/final/mp_rank_{r:02d}_model_states.pt", sc.state_limit_bytes) for r in range(sc.tp)]
    return [("metrics.jsonl", 4 << 20), *saved, *runkit.rank_files("observe", sc.tp, sc.record_limit_bytes)]


KIT = runkit.case_kit("TPReplicaClipDrift", Scenario.from_request, PIPELINE, fixtures=save, launch=launch,
                      wanted=wanted, warm_alone=True)

if __name__ == "__main__":
    runkit.main(KIT)
