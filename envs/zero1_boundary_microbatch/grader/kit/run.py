"""Run phase of TrainFail/ZeroBoundaryMicrobatch-v1 (untrusted: beside the revision; no verdicts).

    python /kit/run.py --scenarios /io/scenarios.json --out-dir /out

For each scenario: a fresh copy of the revision, the grader's own initial weights and data
(``fixtures.py``), the README's training run (``torchrun -m surrogate.train --config
configs/dp2.yaml`` with overrides pinning every setting the judge's reference depends on; the
rank count is torchrun's, whatever ``parallel.data_parallel_size`` says), the partition observer
in every rank, and under ``OUT/<scenario>/`` the README's ``metrics.jsonl`` and
``final/model.pt``, the observer's ``observe/rank<R>.pt``, ``job.log`` and ``timings.json``.
Single scenarios and groups fork their ranks from one warm launcher (torch and DeepSpeed
imported once).
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import runkit  # the harness library (on the path in grading sandboxes)
from fixtures import write_inputs
from launch import Pipeline, RunResult, dotted, observe_settings
from scenario import Scenario

PIPELINE = Pipeline(
    "surrogate.train",
    ("--config", "configs/dp2.yaml"),
    # DeepSpeed imports its Muon optimizer (and torch's inductor with it, about 2.5 s) lazily in
    # its optimizer sanity check: preloading it saves that on every rank
    ("torch", "torch.distributed", "deepspeed", "deepspeed.runtime.engine", "deepspeed.runtime.bf16_optimizer",
     "deepspeed.runtime.zero.muon.muon_optimizer", "yaml"),
    observer_path=(Path(__file__).resolve().parent / "observe",), observers=("zero_partitions:start",),
)

#: README options pinned to a scenario field of the same meaning.
FROM_SCENARIO = {
    "model.input_dim": "input_dim", "model.hidden_size": "hidden_size", "model.num_layers": "num_layers",
    "model.output_dim": "output_dim", "data.micro_batch_size": "micro_rows", "train.steps": "steps", "train.lr": "lr",
    "data.gradient_accumulation_steps": "accumulation", "precision.bf16": "bf16", "deepspeed.zero_stage": "zero_stage",
    "deepspeed.gradient_clipping": "gradient_clipping",
}


def overrides(sc: Scenario, weights: Path, data: Path, output_dir: Path) -> list[str]:
    """README options that pin everything the reference depends on (fp32 accumulation, the only
    value the README supports; the config's own log interval unless the scenario sets one)."""
    options = {option: getattr(sc, name) for option, name in FROM_SCENARIO.items()}
    options.update({"run_name": sc.name, "output_dir": output_dir, "model.init_checkpoint": weights, "data.path": data,
                    "parallel.data_parallel_size": sc.config_ranks or sc.devices, "precision.grad_accum_dtype": "fp32"})
    return dotted(options) + ([f"train.log_interval={sc.log_interval}"] if sc.log_interval else [])


def launch(sc: Scenario, workspace: Path, inputs: tuple[Path, Path], out_dir: Path, log: Path,
           warm: Any | None) -> RunResult:  # fmt: skip
    # the partition observer in every rank, for every optimizer step of the run
    records = out_dir / sc.name / "observe"
    job = {"workspace": workspace, "nproc": sc.devices, "log_path": log, "timeout_s": sc.run_timeout_s}
    return PIPELINE.run(args=overrides(sc, *inputs, out_dir), backend=sc.backend, warm=warm,
                        observe=observe_settings(records, sc.steps), **job)


# a single scenario is forked from the warm server too: torch's and DeepSpeed's imports
# dominate a one-scenario launch (qualification compares single runs with groups)
KIT = runkit.case_kit(
    "ZeroBoundaryMicrobatch", Scenario.from_request, PIPELINE, fixtures=write_inputs, launch=launch, warm_alone=True,
    wanted=lambda sc: [("final/model.pt", sc.state_limit_bytes), ("metrics.jsonl", 4 << 20),
                       *runkit.rank_files("observe", sc.devices, sc.record_limit_bytes)],
)

if __name__ == "__main__":
    runkit.main(KIT)
