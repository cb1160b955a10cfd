"""Run phase of TrainFail/MoEExpertGradScale-v1 (untrusted: beside the revision; no verdicts).

    python /kit/run.py --scenarios /io/scenarios.json --out-dir /out

Per scenario (``runkit``): a fresh copy of the revision, the grader's inputs (``fixtures.py``),
``torchrun --nproc_per_node=<world> -m moetrain.train --config configs/ep2.yaml`` with settings
that pin what the judge's reference depends on and the ``expert_layout`` observer in every rank,
then ``metrics.jsonl``, ``checkpoints/final/rank<R>.pt`` and ``observe/rank<R>.pt`` copied under
``OUT/<scenario>/`` (regular files within their limits). The rank count is only torchrun's:
no setting repeats it. Every launch, a lone scenario's too, forks from one warm launcher.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import runkit  # the harness library
from fixtures import make_inputs, save_inputs
from launch import Pipeline, RunResult, dotted
from scenario import Scenario

HERE = Path(__file__).resolve().parent
PIPELINE = Pipeline(
    module="moetrain.train",
    base_args=("--config", "configs/ep2.yaml"),
    # torch._dynamo and inductor: what building the optimizer (torch.optim's compile guard) and
    # DeepSpeed's ZeRO optimizer check (its muon module compiles at import) would import in every
    # rank after the fork, 3-4 s a rank on 2 cores
    preload=("torch", "torch.distributed", "deepspeed", "deepspeed.moe.layer", "deepspeed.runtime.zero.stage_1_and_2",
             "yaml", "torch._dynamo", "torch._inductor.compile_fx", "deepspeed.runtime.zero.muon.muon_optimizer",
             "deepspeed.ops.op_builder"),
    observers=("expert_layout:install",),
    observer_path=(HERE / "observe",),
)


def settings(sc: Scenario, files: dict[str, Path], out_dir: Path) -> dict[str, Any]:
    return {"run_name": sc.name, "output_dir": out_dir, "parallel.expert_parallel_size": sc.ep,
            "model.input_dim": sc.input_dim, "model.hidden_size": sc.hidden_size,
            "model.ffn_hidden_size": sc.ffn_hidden_size, "model.output_dim": sc.output_dim,
            "model.num_experts": sc.num_experts, "model.aux_loss_coef": sc.aux_loss_coef,
            "data.global_batch_size": sc.global_batch, "train.steps": sc.steps, "train.lr": sc.lr,
            "train.weight_decay": sc.weight_decay, "deepspeed.zero_stage": sc.zero_stage, **files}


def launch(sc: Scenario, workspace: Path, files: dict[str, Path], out_dir: Path, log: Path,
           warm: Any | None) -> RunResult:
    observe = {"TRAINFAIL_OBSERVE_DIR": str(out_dir / sc.name / "observe"), "TRAINFAIL_OBSERVE_STEPS": str(sc.steps)}
    return PIPELINE.run(workspace=workspace, args=dotted(settings(sc, files, out_dir)), nproc=sc.world, log_path=log,
                        timeout_s=sc.run_timeout_s, backend=sc.backend, warm=warm, observe=observe)


def wanted(sc: Scenario) -> list[tuple[str, int]]:
    ranks = range(sc.world)
    return [("metrics.jsonl", 1 << 20), *[(f"checkpoints/final/rank{r}.pt", sc.state_limit_bytes) for r in ranks],
            *[(f"observe/rank{r}.pt", 1 << 20) for r in ranks]]


KIT = runkit.case_kit("MoEExpertGradScale", Scenario.from_request, PIPELINE,
                      fixtures=lambda sc, folder: save_inputs(make_inputs(sc), folder),
                      launch=launch, wanted=wanted, warm_alone=True)

if __name__ == "__main__":
    runkit.main(KIT)
