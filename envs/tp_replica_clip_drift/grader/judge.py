"""Judge phase of TrainFail/TPReplicaClipDrift-v1 (trusted: no revision code runs here).

    python /grader/judge.py --scenarios /io/scenarios.json --artifacts /artifacts \
        --run /io/run.json --out-dir /io/outcomes

The README requires every replicated parameter to be identical on all tensor-parallel ranks
after every step, in its fp32 master and its bf16 copy, and the run to follow TP=1 training.
So, in this order: the observer's masters of every replicated parameter are bitwise equal on
all ranks at the start of every step; so are the saved weights; the masters gathered by the
README's layout stay within ``master_atol`` of the judge's own TP=1 trajectory (``oracle.py``,
from inputs it rebuilds itself); the saved model is within ``final_atol`` of the reference's
last step. The observer runs inside the revision's processes: its records count only where
they follow the trusted trajectory and agree with the checkpoint the pipeline saved.

Leak canary (must never appear where the agent or the run phase can look):
TRAINFAIL-CANARY-4e0da5553452c94d11fa17233876f6f2
"""
from __future__ import annotations

import math
import sys
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(1, str(Path(__file__).resolve().parent / "kit"))

# the harness library's judge blocks, used by module name: compare.*, readers.*, judgekit.*
import compare  # noqa: E402
import fixtures  # noqa: E402
import judgekit  # noqa: E402
import oracle  # noqa: E402
import readers  # noqa: E402
import torch  # noqa: E402
from scenario import Scenario, partition_dim  # noqa: E402

Check = compare.Check


@dataclass(frozen=True)
class Observation:
    metrics: list[readers.Step]
    saved: list[readers.State]
    #: ``records[r][k]``: rank ``r``'s masters at the start of step ``k``
    records: list[list[readers.State]]


def observe(sc: Scenario, folder: Path) -> Observation:
    """The README's outputs and the observer's records, read as adversarial data."""
    if folder.is_symlink() or not folder.is_dir():
        raise readers.ArtifactError("the run left no artifacts folder for this scenario")
    metrics = readers.read_jsonl(folder / "metrics.jsonl", index="step", fields=("loss", "grad_norm"), count=sc.steps)
    saved = readers.read_model_states(folder / "checkpoints" / "final", sc.tp, sc.state_limit_bytes)
    blobs = readers.read_rank_records(folder / "observe", sc.tp, sc.record_limit_bytes)
    records = [readers.states(blob.get("states"), f"rank {r} record", sc.steps) for r, blob in enumerate(blobs)]
    return Observation(metrics, saved, records)


def layout_problem(sc: Scenario, ref: oracle.Trajectory, obs: Observation) -> str | None:
    """The first saved state or record whose names and shapes are not the README layout's."""
    full = compare.shapes_of(ref.final)
    replicated = {n: s for n, s in full.items() if partition_dim(n) is None}
    problem = compare.shard_problem(obs.saved, full, partition_dim, "checkpoint of rank")
    for step in range(sc.steps):
        if problem is None:
            shapes = full if sc.records_full(step) else replicated
            ranks = [r[step] for r in obs.records]
            problem = compare.shard_problem(ranks, shapes, partition_dim, f"step {step} record of rank")
    return problem


def judge(sc: Scenario, ref: oracle.Trajectory, obs: Observation) -> judgekit.Verdict:
    """The observation against the trusted trajectory, checks in the module docstring's order."""
    replicated = [n for n in ref.final if partition_dim(n) is None]
    metrics: dict[str, object] = {"ref_clipped_steps": ref.clipped(sc.max_norm), "ref_grad_norm_step0": ref.norms[0]}
    clipped = ref.clipped(sc.max_norm)
    if clipped < math.ceil(sc.min_clipped_fraction * sc.steps) * (sc.max_norm > 0):
        return judgekit.Verdict("fail", f"scenario guard: the reference clips {clipped} of {sc.steps} steps", metrics)
    if sc.steps - clipped < sc.min_unclipped_steps:
        return judgekit.Verdict("fail", f"scenario guard: the reference clips all but {sc.steps - clipped}", metrics)
    problem = layout_problem(sc, ref, obs)
    if problem is not None:
        return judgekit.Verdict("fail", f"unusable: {problem}", metrics)
    spreads, spread, spread_at, drift, drift_at = [], 0.0, "", 0.0, ""
    for step, want in enumerate(ref.starts):
        ranks = [r[step] for r in obs.records]
        value, name = compare.replica_spread(ranks, [n for n in replicated if n in ranks[0]])
        spreads.append(value)
        if not value <= spread:
            spread, spread_at = value, f"{name} at the start of step {step}"
        off, where = compare.max_abs_diff(compare.gather_shards(ranks, partition_dim), want, list(ranks[0]))
        if not off <= drift:
            drift, drift_at = off, f"{where} at the start of step {step}"
    first = next((k for k, v in enumerate(spreads) if not v <= 0.0), None)
    saved_spread, saved_at = compare.replica_spread(obs.saved, replicated)
    final = {k: v.to(torch.bfloat16).float() for k, v in ref.final.items()} if sc.bf16 else ref.final
    final_off, final_at = compare.max_abs_diff(compare.gather_shards(obs.saved, partition_dim), final)
    metrics = {"replicated_max_spread": spread, **metrics, "first_step_with_spread": first, "spread_per_step": spreads,
               "max_abs_master_diff": drift, "worst_master": drift_at, "final_replicated_spread": saved_spread,
               "final_max_abs_diff": final_off, "worst_final": final_at}
    return compare.verdict([
        Check(not spread <= 0.0, f"replicated parameter {spread_at} differs across tensor-parallel ranks by "
              f"{spread:.3e} (first seen at the start of step {first})"),
        Check(not saved_spread <= 0.0, f"replicated parameter {saved_at} differs across tensor-parallel ranks in "
              f"the saved checkpoint by {saved_spread:.3e}"),
        Check.within("max |d master|", drift, sc.master_atol,
                     f"fp32 master weights leave the TP=1 reference trajectory at {drift_at}"),
        Check.within("max |d saved|", final_off, sc.final_atol,
                     f"saved weights differ from the TP=1 reference after the last step at {final_at}"),
    ], metrics, f"TP={sc.tp}: replicas identical at every step, masters within {drift:.2e} of the TP=1 reference, "
                f"saved model within {final_off:.2e}")


def against_reference(sc: Scenario, obs: Observation) -> judgekit.Verdict:
    """The observation against the TP=1 trajectory from the judge's own inputs."""
    return judge(sc, oracle.train(sc, *fixtures.build(sc)), obs)


KIT = judgekit.JudgeKit("TPReplicaClipDrift", Scenario.from_request, observe, against_reference)

if __name__ == "__main__":
    torch.set_num_threads(1)  # one reduction order for the reference, run after run
    judgekit.main(KIT)
