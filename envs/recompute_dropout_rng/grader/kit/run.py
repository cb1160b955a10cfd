"""Run phase of TrainFail/RecomputeDropoutRNG-v1 (untrusted: beside the revision; no verdicts).

    python /kit/run.py --scenarios /io/scenarios.json --out-dir /out

Per scenario (``runkit``): a fresh copy of the revision, the grader's corpus (``rows.py``), the
README's run ``torchrun -m petite.train --config configs/small.toml`` with overrides pinning what
the judge's reference depends on (``config = "shipped"``: only the step count, the output folder
and the corpus), the ``remat_probe`` observer in every rank; ``model.pt``, ``metrics.jsonl`` and
``observe/rank<R>.pt`` copied under ``OUT/<scenario>/``.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import runkit  # the harness library
from launch import Pipeline, RunResult, dotted, observe_settings
from rows import generate, write_jsonl
from scenario import Scenario

HERE = Path(__file__).resolve().parent
PIPELINE = Pipeline(
    module="petite.train",
    base_args=("--config", "configs/small.toml"),
    preload=("torch", "torch.distributed", "torch.nn.parallel", "torch.utils.checkpoint",
             "torch.distributed.algorithms._checkpoint.checkpoint_wrapper"),
    observers=("remat_probe:install",),
    observer_path=(HERE / "observe",),
)


def overrides(sc: Scenario, data: Path, out_dir: Path) -> list[str]:
    where = {"train.steps": sc.steps, "train.output_dir": out_dir / sc.name, "data.path": data,
             "train.log_every": 1}
    if sc.config == "shipped":
        return dotted(where)
    return dotted(where | {
        "train.seed": sc.seed, "train.batch_size": sc.batch_size, "train.lr": sc.lr,
        "train.deterministic": sc.deterministic,
        "model.vocab_size": sc.vocab_size, "model.seq_len": sc.seq_len, "model.d_model": sc.d_model,
        "model.n_heads": sc.n_heads, "model.n_layers": sc.n_layers, "model.embd_dropout": sc.embd_dropout,
        "model.attn_dropout": sc.attn_dropout, "model.resid_dropout": sc.resid_dropout,
        "remat.mode": sc.mode, "remat.segments": sc.segments, "remat.use_reentrant": sc.use_reentrant,
    })


def launch(sc: Scenario, workspace: Path, data: Path, out_dir: Path, log: Path, warm: Any | None) -> RunResult:
    observe = observe_settings(out_dir / sc.name / "observe", sc.steps)
    return PIPELINE.run(workspace=workspace, args=overrides(sc, data, out_dir), nproc=sc.world_size, log_path=log,
                        timeout_s=sc.run_timeout_s, backend=sc.backend, warm=warm, observe=observe)


def wanted(sc: Scenario) -> list[tuple[str, int]]:
    return [("model.pt", sc.state_limit_bytes), ("metrics.jsonl", 1 << 20),
            *[(f"observe/rank{r}.pt", sc.record_limit_bytes) for r in range(sc.world_size)]]


KIT = runkit.case_kit("RecomputeDropoutRNG", Scenario.from_request, PIPELINE,
                      fixtures=lambda sc, folder: write_jsonl(generate(sc), folder / "corpus.jsonl"),
                      launch=launch, wanted=wanted, warm_alone=True)

if __name__ == "__main__":
    runkit.main(KIT)
