"""Judge phase of TrainFail/DDPBypassDrift-v1 (trusted: no revision code runs here).

    python /grader/judge.py --scenarios /io/scenarios.json --artifacts /artifacts \
        --run /io/run.json --out-dir /io/outcomes

Reads the README's outputs and every rank's observer record as adversarial data, draws the
grader's inputs again (``kit/fixtures.py``) and passes a scenario only if, in this order: every
rank's first recorded weights are the grader's initial weights, bitwise; every parameter is
bitwise the same on every rank before every step and after the last (``replica_atol``); every
rank's applied gradient at every step is within ``grad_rtol`` (relative L2, per parameter) of
the judge's float64 gradient of the README's objective over the whole global batch at rank 0's
weights (``oracle.py``); every step replays as plain SGD (``replay_atol``); and the checkpoint
rank 0 saved is the weights after the last step, bitwise. By induction, records that pass
describe correct data-parallel training from the grader's start on the grader's data.

Leak canary (must never appear where the agent or the run phase can look):
TRAINFAIL-CANARY-da8f1bc14ff94b02b82b8098a42c7ece
"""
from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(1, str(Path(__file__).resolve().parent / "kit"))

import judgekit  # noqa: E402 - the harness library
import torch  # noqa: E402
from compare import Check, max_abs_diff, rel_l2, replica_spread, structure_problem, verdict  # noqa: E402
from fixtures import Windows, make_windows  # noqa: E402
from oracle import objective_gradient  # noqa: E402
from readers import ArtifactError, State, Step, read_jsonl, read_rank_records, read_state, state_dict, states  # noqa: E402
from scenario import Scenario  # noqa: E402

#: Gradient norms below this count as zero when the relative error is taken.
GRAD_FLOOR = 1e-6


@dataclass(frozen=True)
class RankRecord:
    """One rank's weights and gradients before every step, and weights after the last."""

    params: list[State]
    grads: list[State]
    final: State


@dataclass(frozen=True)
class Observation:
    metrics: list[Step]
    saved: State
    ranks: list[RankRecord]


def observe(sc: Scenario, folder: Path) -> Observation:
    """The README's outputs and the observer's records (``ArtifactError`` when unusable)."""
    if not folder.is_dir() or folder.is_symlink() or (folder / "checkpoints").is_symlink():
        raise ArtifactError("the run left no usable artifacts folder for this scenario")
    records = read_rank_records(folder / "observe", sc.devices, sc.record_limit_bytes)
    for r, rec in enumerate(records):
        if rec.get("world") != sc.devices:
            raise ArtifactError(f"rank{r}.pt: recorded in a job of {rec.get('world')!r} ranks, not {sc.devices}")
    return Observation(
        metrics=read_jsonl(folder / "metrics.jsonl", index="step", fields=("loss",), count=sc.steps),
        saved=read_state(folder / "checkpoints" / "final.pt", sc.state_limit_bytes),
        ranks=[RankRecord(states(rec.get("params"), f"rank{r}.pt params", sc.steps),
                          states(rec.get("grads"), f"rank{r}.pt grads", sc.steps),
                          state_dict(rec.get("final"), f"rank{r}.pt final")) for r, rec in enumerate(records)],
    )


def _structure(sc: Scenario, obs: Observation) -> str | None:
    named = [("saved checkpoint", obs.saved)]
    for r, rec in enumerate(obs.ranks):
        named += [(f"rank {r} params {k}", s) for k, s in enumerate(rec.params)]
        named += [(f"rank {r} grads {k}", s) for k, s in enumerate(rec.grads)]
        named.append((f"rank {r} final", rec.final))
    return next(filter(None, (structure_problem(state, sc.shapes, what) for what, state in named)), None)


def _gradient_errors(sc: Scenario, data: Windows, obs: Observation) -> list[tuple[float, str]]:
    """Per step: the worst relative error of one parameter's gradient on any rank, and where."""
    out = []
    for k in range(sc.steps):
        want = objective_gradient(sc, data, obs.ranks[0].params[k], k)
        worst, where = 0.0, ""
        for r, rec in enumerate(obs.ranks):
            for name, g in want.items():
                err = rel_l2(rec.grads[k][name], g, floor=GRAD_FLOOR)
                if not err <= worst:
                    worst, where = err, f"{name} on rank {r} at step {k}"
        out.append((worst, where))
    return out


def compare(sc: Scenario, obs: Observation) -> judgekit.Verdict:
    """Replicas, gradients, SGD replay and the saved model against the judge's own reference."""
    problem = _structure(sc, obs)
    if problem is not None:
        return judgekit.Verdict("fail", f"records unusable: {problem}")
    data = make_windows(sc)
    spread = [replica_spread([rec.params[k] for rec in obs.ranks]) for k in range(sc.steps)]
    spread.append(replica_spread([rec.final for rec in obs.ranks]))
    at = max(range(len(spread)), key=lambda k: spread[k][0])
    first = next((k for k, (s, _) in enumerate(spread) if not s <= sc.replica_atol), None)
    grads = _gradient_errors(sc, data, obs)
    worst_step = max(range(sc.steps), key=lambda k: grads[k][0])
    replay, replay_at = 0.0, ""
    for r, rec in enumerate(obs.ranks):
        for k, nxt in enumerate([*rec.params[1:], rec.final]):
            stepped = {n: p.add(rec.grads[k][n], alpha=-sc.lr) for n, p in rec.params[k].items()}
            diff, name = max_abs_diff(nxt, stepped)
            if not diff <= replay:
                replay, replay_at = diff, f"{name} on rank {r} after step {k}"
    init_diff = max(max_abs_diff(rec.params[0], data.init)[0] for rec in obs.ranks)
    saved_diff = max_abs_diff(obs.saved, obs.ranks[0].final)[0]
    def when(k: int) -> str:
        return f"the start of step {k}" if k < sc.steps else "the end of training"

    seen = first if first is not None else at
    metrics = {"max_replica_spread": spread[at][0], "max_grad_rel_err": grads[worst_step][0],
               "first_step_with_spread": first, "spread_per_step": [s for s, _ in spread],
               "grad_rel_err_per_step": [e for e, _ in grads], "max_replay_diff": replay, "init_diff": init_diff,
               "saved_vs_final_diff": saved_diff, "replica_atol": sc.replica_atol, "grad_rtol": sc.grad_rtol,
               "replay_atol": sc.replay_atol}  # fmt: skip
    return verdict([
        Check(not init_diff <= 0.0, f"the first recorded step does not start from the grader's initial weights "
              f"(max |d| {init_diff:.3e})"),
        Check.within("replica spread", spread[at][0], sc.replica_atol,
                     f"parameter {spread[seen][1]} differs across data-parallel ranks at {when(seen)} (the most: "
                     f"{spread[at][1]} at {when(at)})"),
        Check.within("grad rel L2", grads[worst_step][0], sc.grad_rtol,
                     f"the gradient applied is not the global-batch gradient of the objective at "
                     f"{grads[worst_step][1]}"),
        Check.within("replay", replay, sc.replay_atol,
                     f"the weights change between steps by more than SGD with the applied gradient at {replay_at}"),
        Check(not saved_diff <= 0.0, f"the saved checkpoint is not the weights after the last step "
              f"(max |d| {saved_diff:.3e})"),
    ], metrics, f"{sc.devices} rank(s): replicas identical at every step, gradients within "
                f"{grads[worst_step][0]:.2e} of the global-batch gradient, SGD replays within {replay:.1e}")


KIT = judgekit.JudgeKit("DDPBypassDrift", Scenario.from_request, observe, compare)

if __name__ == "__main__":
    torch.set_num_threads(1)  # one reduction order for the float64 gradients, run after run
    judgekit.main(KIT)
