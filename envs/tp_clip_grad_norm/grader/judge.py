"""Judge phase of TrainFail/TPClipGradNorm-v1 (trusted: no revision code runs here).

    python /grader/judge.py --scenarios /io/scenarios.json --artifacts /artifacts \
        --run /io/run.json --out-dir /io/outcomes

Reads the README's outputs as adversarial data (``readers``: bounded, regular files, no
pickle), regenerates the scenario's inputs and trains the one-rank reference
(``oracle.py``), and passes a scenario only if every rank's saved pieces have the README
layout's shapes, every replicated parameter is identical on all ranks, the gathered model
matches the reference, and every logged ``grad_norm`` (the norm the README defines) and
``loss`` match the reference's. Rewritten outputs can at best be those of correct training.

Leak canary (must never appear where the agent or the run phase can look):
TRAINFAIL-CANARY-3c6bc3b18fa90539fd517354ed3b50ba
"""
from __future__ import annotations

import math
import sys
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(1, str(Path(__file__).resolve().parent / "kit"))

import judgekit  # noqa: E402 - the harness library
import torch  # noqa: E402
from compare import Check, gather_shards, max_abs_diff, max_rel_error, replica_spread, shapes_of, shard_problem, verdict  # noqa: E402
from fixtures import make_inputs  # noqa: E402
from oracle import Reference, reference_run  # noqa: E402
from readers import ArtifactError, State, Step, read_jsonl, read_model_states  # noqa: E402
from scenario import Scenario, split_dim  # noqa: E402


@dataclass(frozen=True)
class Observation:
    metrics: list[Step]
    ranks: list[State]


def observe(sc: Scenario, folder: Path) -> Observation:
    """``metrics.jsonl`` (steps ``0..steps-1``) and every rank's saved model state."""
    if folder.is_symlink() or not folder.is_dir():
        raise ArtifactError("the run left no artifacts folder for this scenario")
    metrics = read_jsonl(folder / "metrics.jsonl", index="step", fields=("loss", "grad_norm"), count=sc.steps)
    return Observation(metrics, read_model_states(folder / "checkpoints" / "final", sc.tp, sc.state_limit_bytes))


def guard(sc: Scenario, ref: Reference) -> str | None:
    """Why the scenario would not ask its question (a grader fault, never the revision's)."""
    clipped = ref.clipped(sc.max_norm)
    if clipped < math.ceil(sc.min_clipped_fraction * sc.steps) * sc.clipping:
        return f"scenario guard: the reference clips {clipped} of {sc.steps} steps"
    if sc.steps - clipped < sc.min_unclipped_steps:
        return f"scenario guard: the reference leaves {sc.steps - clipped} steps unclipped"
    return None


def judge(sc: Scenario, ref: Reference, obs: Observation) -> judgekit.Verdict:
    """The observation against the reference: guard, layout, replicas, model, logged norms, losses."""
    replicated = [name for name in ref.params if split_dim(name) is None]
    spread, spread_at = replica_spread(obs.ranks, replicated)
    logged = [s["grad_norm"] for s in obs.metrics]
    norm_err, _ = max_rel_error(logged, ref.norms)
    # the first step whose logged norm is off: where the run first stopped counting every shard
    at = next((k for k, (got, want) in enumerate(zip(logged, ref.norms, strict=True))
               if got is None or not abs(got - want) <= sc.norm_rtol * abs(want)), 0)
    loss_err, _ = max_rel_error([s["loss"] for s in obs.metrics], ref.losses)
    # the logged norm is judged with clipping off too: the README promises the same grad_norm at every setting
    metrics = {"grad_norm_max_rel_err": norm_err}
    metrics |= {"replicated_max_spread": spread, "loss_max_rel_err": loss_err,
               "ref_clipped_steps": ref.clipped(sc.max_norm), "ref_grad_norm_step0": ref.norms[0],
               "run_grad_norm_step0": obs.metrics[0]["grad_norm"]}
    problem = guard(sc, ref) or shard_problem(obs.ranks, shapes_of(ref.params), split_dim, "checkpoint of rank")
    if problem is not None:
        return judgekit.Verdict("fail", problem, metrics)
    diff, worst = max_abs_diff(gather_shards(obs.ranks, split_dim), ref.params)
    metrics |= {"max_abs_param_diff": diff, "worst_param": worst}
    return verdict([
        Check(not spread <= 0.0, f"replicated parameter {spread_at} differs across tensor-parallel ranks by "
              f"{spread:.3e}"),
        Check.within("max |dparam|", diff, sc.param_atol,
                     f"final parameters differ from the TP=1 reference at {worst}"),
        Check(not norm_err <= sc.norm_rtol,
              f"logged grad_norm is not the global norm of the full model's gradient: step {at} logs "
              f"{logged[at]!r}, the reference norm is {ref.norms[at]!r} (max rel err {norm_err:.3e}, "
              f"tolerance {sc.norm_rtol:g})"),
        Check.within("loss rel err", loss_err, sc.loss_rtol, "logged loss differs from the TP=1 reference"),
    ], metrics, f"TP={sc.tp} matches the TP=1 reference (max |dparam| {diff:.2e}, grad-norm rel err {norm_err:.2e}, "
                f"loss rel err {loss_err:.2e})")


def compare(sc: Scenario, obs: Observation) -> judgekit.Verdict:
    """The observation against the reference trained from the judge's own inputs."""
    return judge(sc, reference_run(sc, make_inputs(sc)), obs)


KIT = judgekit.JudgeKit("TPClipGradNorm", Scenario.from_request, observe, compare)

if __name__ == "__main__":
    torch.set_num_threads(1)  # one reduction order for the reference, run after run
    judgekit.main(KIT)
