"""Run phase of TrainFail/MoEAllToAllHang-v1 (untrusted: beside the revision; no verdicts).

    python /kit/run.py --scenarios /io/scenarios.json --out-dir /out

Per scenario (``runkit``): a fresh copy of the revision, the grader's corpus and initial weights
(``fixtures.py``), then the README's launch, ``torchrun --nproc_per_node=<world> -m
switchyard.fit --config configs/switch2.toml --set ...`` with options that pin everything the
judge's reference depends on and the ``exchange_log`` observer in every rank; then
``metrics.jsonl``, ``final/rank<R>.pt`` and ``observe/rank<R>.pt`` copied under
``OUT/<scenario>/`` (regular files within their limits). The rank count is only torchrun's: no
option repeats it. A launch that has not finished by the scenario's deadline is stopped with its
whole process tree (``runkit``), and the judge fails it.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import runkit  # the harness library
from fixtures import save_inputs
from launch import Pipeline, RunResult, dotted
from scenario import Scenario

#: What every rank imports: the warm launcher pays for it once per group. The engine, torch._dynamo
#: and inductor are what ``deepspeed.initialize`` and building the optimizer (torch.optim's compile
#: guard) would import in every rank after the fork: about 1 s a rank alone, more when 4 ranks share 2 cores.
IMPORTS = ("torch", "torch.distributed", "deepspeed", "deepspeed.moe.layer", "deepspeed.moe.sharded_moe",
           "deepspeed.runtime.engine", "torch._dynamo", "torch._inductor.compile_fx", "tomllib")
#: The README's launch (``-m switchyard.fit`` with the team's config), the exchange log in every rank.
PIPELINE = Pipeline("switchyard.fit", ("--config", "configs/switch2.toml"), IMPORTS, ("exchange_log:install",),
                    (Path(__file__).resolve().parent / "observe",))


def options(sc: Scenario, files: dict[str, Path], out_dir: Path) -> dict[str, Any]:
    return {"run.name": sc.name, "run.output_dir": out_dir, "parallel.expert_parallel_size": sc.ep,
            "moe.top_k": sc.top_k, "moe.slab_rows": sc.slab_rows, "moe.num_experts": sc.num_experts,
            "model.input_dim": sc.input_dim, "model.hidden_size": sc.hidden_size,
            "model.ffn_hidden_size": sc.ffn_hidden_size, "model.output_dim": sc.output_dim,
            "data.docs_per_step": sc.docs_per_step, "train.steps": sc.steps, "train.lr": sc.lr,
            "train.log_every": 1, **files}


def launch(sc: Scenario, workspace: Path, files: dict[str, Path], out_dir: Path, log: Path,
           warm: Any | None) -> RunResult:
    args: list[str] = []
    for item in dotted(options(sc, files, out_dir)):
        args += ["--set", item]
    observe = {"TRAINFAIL_OBSERVE_DIR": str(out_dir / sc.name / "observe"), "TRAINFAIL_OBSERVE_STEPS": str(sc.steps)}
    return PIPELINE.run(workspace=workspace, args=args, nproc=sc.world, log_path=log, timeout_s=sc.run_timeout_s,
                        backend=sc.backend, warm=warm, observe=observe)


def wanted(sc: Scenario) -> list[tuple[str, int]]:
    return [("metrics.jsonl", 1 << 20),
            *[(f"final/rank{r}.pt", sc.state_limit_bytes) for r in range(sc.world)],
            *runkit.rank_files("observe", sc.world, 1 << 20)]


KIT = runkit.case_kit("MoEAllToAllHang", Scenario.from_request, PIPELINE, fixtures=save_inputs, launch=launch,
                      wanted=wanted, warm_alone=True)

if __name__ == "__main__":
    runkit.main(KIT)
