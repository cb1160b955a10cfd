"""Run phase of TrainFail/TPClipGradNorm-v1 (untrusted: beside the revision; no verdicts).

    python /kit/run.py --scenarios /io/scenarios.json --out-dir /out

Per scenario (``runkit.case_kit``): a fresh copy of the revision, the grader's own weights and
table (``fixtures.py``), the README's run (``torchrun -m surrogate.train --config
configs/tp2.yaml`` with README-key overrides pinning what the judge's reference depends on;
ranks forked from one warm launcher that imported torch, DeepSpeed and megatron-core once, a
single scenario's too), and under ``OUT/<scenario>/`` the README's outputs ``metrics.jsonl``
and ``checkpoints/final/mp_rank_XX_model_states.pt`` (regular files within their limits),
``job.log`` and ``timings.json``.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import runkit  # the harness library
from fixtures import Files, write_inputs
from launch import Pipeline, RunResult, dotted
from scenario import Scenario

PIPELINE = Pipeline(
    module="surrogate.train",
    base_args=("--config", "configs/tp2.yaml"),
    preload=("torch", "torch.distributed", "deepspeed", "megatron.core", "megatron.core.parallel_state",
             "megatron.core.tensor_parallel", "pydantic", "yaml"),
)


def launch(sc: Scenario, workspace: Path, files: Files, out_dir: Path, log: Path, warm: Any | None) -> RunResult:
    settings = dotted({
        "run_name": sc.name, "output_dir": out_dir, "parallel.tensor_model_parallel_size": sc.tp,
        "model.input_dim": sc.input_dim, "model.hidden_size": sc.hidden_size,
        "model.ffn_hidden_size": sc.ffn_hidden_size, "model.num_layers": sc.num_layers,
        "model.output_dim": sc.output_dim, "model.init_checkpoint": files.init, "data.path": files.data,
        "data.batch_size": sc.batch_size, "train.steps": sc.steps, "train.lr": sc.lr,
        "train.log_interval": sc.log_interval, "deepspeed.zero_stage": sc.zero_stage,
        "deepspeed.gradient_clipping": sc.max_norm,
    })
    return PIPELINE.run(workspace=workspace, args=settings, nproc=sc.tp, log_path=log, timeout_s=sc.run_timeout_s,
                        backend=sc.backend, warm=warm)


def wanted(sc: Scenario) -> list[tuple[str, int]]:
    states = [(f"checkpoints/final/mp_rank_{r:02d}_model_states.pt", sc.state_limit_bytes) for r in range(sc.tp)]
    return [("metrics.jsonl", 4 << 20), *states]


KIT = runkit.case_kit("TPClipGradNorm", Scenario.from_request, PIPELINE, fixtures=write_inputs, launch=launch,
                      wanted=wanted, warm_alone=True)

if __name__ == "__main__":
    runkit.main(KIT)
