"""Run phase of TrainFail/ResumeSkipBatches-v1 (untrusted: beside the revision; no verdicts).

    python /kit/run.py --scenarios /io/scenarios.json --out-dir /out

Per scenario: a fresh copy of the revision, the grader's table and warm start (``fixtures.py``),
and the README's training stopped and resumed in launches: ``train.max_steps=K1``, then
``train.resume_from_checkpoint=.../checkpoint-K1 train.max_steps=K2``, ... to the last step,
each with the order observer on. Under ``OUT/<scenario>/``: ``checkpoint-K/model.pt`` of every
stop, ``observe/segS/rankR.pt``, ``job.log`` (every launch's output) and ``timings.json``. The
first launch that fails ends the scenario: later ones could only resume from nothing.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import runkit  # the harness library (on the path in grading sandboxes)
from fixtures import make_inputs, write_inputs
from launch import Pipeline, RunResult, dotted
from protocol import read_requests
from scenario import Scenario

PIPELINE = Pipeline(
    module="fcast.train",
    base_args=("--config", "configs/base.yaml"),
    # torch._dynamo: the optimizer's first step imports it (seconds), once per rank otherwise
    preload=("torch", "torch.distributed", "torch.nn.parallel", "torch.optim", "torch._dynamo", "accelerate", "yaml"),
    observers=("order_observer:install",),
    observer_path=(Path(__file__).resolve().parent / "observe",),
)


def overrides(sc: Scenario, table: Path, init: Path, out: Path, start: int, stop: int) -> list[str]:
    """README keys pinning what the judge's reference depends on (never ``launch.nproc``)."""
    values: dict[str, Any] = {
        "run_name": sc.name, "output_dir": out, "model.input_dim": sc.input_dim,
        "model.hidden_size": sc.hidden_size, "model.init_checkpoint": init, "data.path": table,
        "data.rows": sc.rows, "data.micro_batch_size": sc.micro_batch_size, "data.shuffle_seed": sc.shuffle_seed,
        "train.gradient_accumulation_steps": sc.accumulation, "train.max_steps": stop, "train.lr": sc.lr,
        "train.momentum": sc.momentum, "train.save_steps": sc.save_steps,
    }  # fmt: skip
    if start:
        values["train.resume_from_checkpoint"] = out / sc.name / f"checkpoint-{start}"
    return dotted(values)


def run_one(sc: Scenario, source: Path, scratch: Path, dest: Path, launchers: runkit.Launchers) -> dict[str, Any]:
    """Fresh workspace copy -> inputs -> one launch per segment -> what the judge reads."""
    workspace = scratch / "workspace"
    shutil.copytree(source, workspace, symlinks=True)
    table, init = write_inputs(make_inputs(sc), scratch / "inputs")
    out = scratch / "outputs"
    runs: list[RunResult] = []
    how = "cold"
    for index, (start, stop) in enumerate(sc.segments):
        args = overrides(sc, table, init, out, start, stop)
        observe = {"TRAINFAIL_OBSERVE_DIR": str(scratch / "observe" / f"seg{index}"),
                   "TRAINFAIL_OBSERVE_STEPS": str(stop - start)}  # fmt: skip
        run, how = launchers.run(lambda warm, a=args, o=observe, i=index: PIPELINE.run(
            workspace=workspace, args=a, nproc=sc.ranks, log_path=scratch / f"launch{i}.log",
            timeout_s=sc.run_timeout_s, backend=sc.backend, warm=warm, observe=o))  # fmt: skip
        runs.append(run)
        if run.returncode != 0:
            break
    with (scratch / "job.log").open("wb") as log:  # every launch's output, in order, each bounded
        for index, run in enumerate(runs):
            runkit.copy_tail(run.log_path, scratch / "tail", runkit.LOG_LIMIT // len(runs))
            log.write(f"=== launch {index}: steps {sc.segments[index]}, exit {run.returncode}\n".encode())
            log.write((scratch / "tail").read_bytes())
    runkit.copy_tail(scratch / "job.log", dest / "job.log", runkit.LOG_LIMIT)
    stops = [stop for _, stop in sc.segments[: len(runs)]]
    notes = runkit.collect(out / sc.name, dest, [(f"checkpoint-{k}/model.pt", sc.state_limit_bytes) for k in stops])
    notes += runkit.collect(scratch, dest, [(f"observe/seg{i}/rank{r}.pt", sc.record_limit_bytes)
                                            for i in range(len(runs)) for r in range(sc.ranks)])  # fmt: skip
    launches = [{"returncode": r.returncode, "seconds": round(r.ended - r.started, 3)} for r in runs]
    return {"launcher": how, "returncode": runs[-1].returncode, "timed_out": runs[-1].timed_out,
            "started": runs[0].started, "ended": runs[-1].ended, "notes": notes, "launches": launches}  # fmt: skip


# every scenario is several launches: pay the imports once, in the warm launcher, for one alone too
KIT = runkit.RunKit("ResumeSkipBatches", Scenario.from_request, run_one, list(PIPELINE.preload),
                    PIPELINE.launch_env, read_requests, warm_alone=True)  # fmt: skip

if __name__ == "__main__":
    runkit.main(KIT)
