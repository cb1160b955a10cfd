"""Run phase of TrainFail/SPDropoutRNG-v2 (untrusted: beside the revision; no verdicts).

    python /kit/run.py --scenarios /io/scenarios.json --out-dir /out

Per scenario (``runkit``): a fresh copy of the revision, then the README's run,
``torchrun --nproc_per_node=<tp> -m seqmodel.train --config configs/tp2-sp.toml`` with overrides
pinning what the judge's step depends on (none but the run name and output folder for
``config = "shipped"``), the ``dropout_record`` observer in every rank (and its autocast probe
where the scenario asks for bf16); ``metrics.jsonl``, ``final/tp_rank_XX.pt`` and
``observe/rank<R>.pt`` are copied under ``OUT/<scenario>/``. There are no grader-owned input
files: the README's batches depend only on ``data.seed``, and the judge makes them itself.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import runkit  # the harness library
from launch import Pipeline, RunResult, dotted
from scenario import Scenario

HERE = Path(__file__).resolve().parent
PIPELINE = Pipeline(
    module="seqmodel.train",
    base_args=("--config", "configs/tp2-sp.toml"),
    preload=("torch", "torch.distributed", "megatron.core", "megatron.core.parallel_state",
             "megatron.core.tensor_parallel"),
    observers=("dropout_record:install",),
    observer_path=(HERE / "observe",),
)


def overrides(sc: Scenario, out_dir: Path) -> list[str]:
    where = {"run_name": sc.name, "output_dir": out_dir}
    if sc.config == "shipped":
        return dotted(where)
    return dotted(where | {
        "train.steps": sc.steps, "train.lr": sc.lr, "train.seed": sc.seed,
        "parallel.tensor_model_parallel_size": sc.tp, "parallel.sequence_parallel": sc.sequence_parallel,
        "model.input_dim": sc.input_dim, "model.hidden_size": sc.hidden_size,
        "model.ffn_hidden_size": sc.ffn_hidden_size, "model.num_layers": sc.num_layers,
        "model.output_dim": sc.output_dim, "model.hidden_dropout": sc.hidden_dropout,
        "model.embed_dropout": sc.embed_dropout, "model.bf16": sc.bf16,
        "data.seq_length": sc.seq_length, "data.batch_size": sc.batch_size, "data.seed": sc.data_seed,
    })


def launch(sc: Scenario, workspace: Path, inputs: Any, out_dir: Path, log: Path, warm: Any | None) -> RunResult:
    observe = {"TRAINFAIL_OBSERVE_DIR": str(out_dir / sc.name / "observe"), "TRAINFAIL_OBSERVE_STEPS": str(sc.steps)}
    if sc.bf16:
        observe["TRAINFAIL_OBSERVE_AUTOCAST"] = "record"
    return PIPELINE.run(workspace=workspace, args=overrides(sc, out_dir), nproc=sc.tp, log_path=log,
                        timeout_s=sc.run_timeout_s, backend=sc.backend, warm=warm, observe=observe)


def wanted(sc: Scenario) -> list[tuple[str, int]]:
    ranks = range(sc.tp)
    return [("metrics.jsonl", 4 << 20), *[(f"final/tp_rank_{r:02d}.pt", sc.state_limit_bytes) for r in ranks],
            *[(f"observe/rank{r}.pt", sc.record_limit_bytes) for r in ranks]]


# a lone scenario forks from the warm server too: torch and megatron-core's imports dominate a
# launch, and the 4-rank scenario is a unit of its own
KIT = runkit.case_kit("SPDropoutRNG", Scenario.from_request, PIPELINE, fixtures=lambda sc, folder: None,
                      launch=launch, wanted=wanted, warm_alone=True)

if __name__ == "__main__":
    runkit.main(KIT)
