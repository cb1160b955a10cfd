"""Run phase of TrainFail/PipelineTiedEmbedding-v1 (untrusted: beside the revision; no verdicts).

    python /kit/run.py --scenarios /io/scenarios.json --out-dir /out

Per scenario (``runkit.case_kit``): a fresh copy of the revision, the grader's own init weights
and token corpus (``fixtures.py``), the README's run (``torchrun -m relaylm.train --config
configs/dp2_pp2.json`` with README-key overrides pinning what the judge's reference depends on,
a checkpoint after every step), and under ``OUT/<scenario>/`` the README's outputs
``metrics.jsonl`` and ``checkpoints/step_XXXXX/stage<S>-dp<D>.pt``, ``job.log`` and
``timings.json``.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import runkit  # the harness library
from fixtures import Files, write_inputs
from launch import Pipeline, RunResult, dotted
from scenario import Scenario

PIPELINE = Pipeline(module="relaylm.train", base_args=("--config", "configs/dp2_pp2.json"),
                    preload=("torch", "torch.distributed", "torch.nn.functional"))


def launch(sc: Scenario, workspace: Path, files: Files, out_dir: Path, log: Path, warm: Any | None) -> RunResult:
    settings = dotted({
        "run_name": sc.name, "output_dir": out_dir, "seed": sc.seed,
        "model.vocab_size": sc.vocab_size, "model.hidden_size": sc.hidden_size, "model.ffn_size": sc.ffn_size,
        "model.num_blocks": sc.num_blocks, "model.init_checkpoint": files.init,
        "pipeline.stages": sc.stages, "pipeline.micro_batches": sc.micro_batches,
        "data.path": files.corpus, "data.seq_len": sc.seq_len, "data.global_batch": sc.global_batch,
        "optim.lr": sc.lr, "optim.momentum": sc.momentum, "train.steps": sc.steps, "train.save_every": 1,
    })
    return PIPELINE.run(workspace=workspace, args=settings, nproc=sc.world_size, log_path=log,
                        timeout_s=sc.run_timeout_s, backend=sc.backend, warm=warm)


def wanted(sc: Scenario) -> list[tuple[str, int]]:
    files = [("metrics.jsonl", 1 << 20)]
    for step in range(1, sc.steps + 1):
        for rank in range(sc.world_size):
            stage, dp = divmod(rank, sc.dp_size)
            files.append((f"checkpoints/step_{step:05d}/stage{stage}-dp{dp}.pt", sc.state_limit_bytes))
    return files


KIT = runkit.case_kit("PipelineTiedEmbedding", Scenario.from_request, PIPELINE, fixtures=write_inputs, launch=launch,
                      wanted=wanted)

if __name__ == "__main__":
    runkit.main(KIT)
