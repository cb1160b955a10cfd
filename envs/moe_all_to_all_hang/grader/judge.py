"""Judge phase of TrainFail/MoEAllToAllHang-v1 (trusted: no revision code runs here).

    python /grader/judge.py --scenarios /io/scenarios.json --artifacts /artifacts \
        --run /io/run.json --out-dir /io/outcomes

A run that has not finished by its scenario's deadline never reaches this file's checks: the
host (a scenario alone) or the judge kit (a launch the run kit stopped) fails it with "no
progress after N s". For a run that finished, the judge regenerates the grader's corpus and
initial weights (``kit/fixtures.py``), trains the README's objective itself in float64 on one
process (``reference.py``: every token through its top-k experts, nothing dropped), and requires

1. ``metrics.jsonl`` to hold steps ``0..steps-1`` whose ``tokens`` are the step's token count and
   whose ``loss`` is the reference objective (``loss_atol``);
2. every rank's ``final/rank<R>.pt`` to hold exactly the dense tensors and the experts the README
   layout gives that rank, each within ``param_atol`` of the reference, and every copy of a tensor
   identical across ranks;
3. with expert parallelism, every rank's observer record to show all-to-all exchanges over a
   group of ``ep`` ranks in every step (expert parallelism was not switched off).

Leak canary (never where the agent or the run phase can look): TRAINFAIL-CANARY-5e6dd55ecb5feb403cb07840d498c9f6
"""
from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(1, str(Path(__file__).resolve().parent / "kit"))

import judgekit  # noqa: E402 - the harness library
import torch  # noqa: E402
from artifacts import integer  # noqa: E402
from compare import Check, max_abs_diff, max_abs_error, replica_spread, verdict  # noqa: E402
from fixtures import corpus, initial_weights  # noqa: E402
from readers import ArtifactError, State, Step, read_jsonl, read_rank_records, read_state  # noqa: E402
from reference import train  # noqa: E402
from scenario import Scenario  # noqa: E402


@dataclass(frozen=True)
class Observation:
    metrics: list[Step]
    finals: list[State]
    #: per rank: all-to-all calls in each observed step, and the group sizes they ran over
    exchanges: list[tuple[list[int], list[int]]]


def exchange_record(record: dict) -> tuple[list[int], list[int]]:
    """``(calls per step, group sizes)`` of one observer record (closed shape: lists of integers)."""
    calls, sizes = record.get("calls"), record.get("group_sizes")
    if not (isinstance(calls, list) and isinstance(sizes, list) and len(calls) <= 10_000 and len(sizes) <= 64):
        raise ArtifactError(f"observe/rank{record.get('rank')}.pt: no calls / group_sizes lists")
    ints = [integer(v) for v in [*calls, *sizes]]
    if any(v is None for v in ints):
        raise ArtifactError(f"observe/rank{record.get('rank')}.pt: calls and group sizes must be integers")
    return [int(v) for v in calls], [int(v) for v in sizes]


def observe(sc: Scenario, folder: Path) -> Observation:
    """The README's outputs and the observer's records, read as adversarial data."""
    metrics = read_jsonl(folder / "metrics.jsonl", index="step", fields=("loss", "tokens"), count=sc.steps)
    finals = []
    for rank in range(sc.world):
        state = read_state(folder / "final" / f"rank{rank}.pt", sc.state_limit_bytes, dtype=torch.float64)
        want = sc.expected_names(rank)
        if sorted(state) != sorted(want):
            extra, missing = sorted(set(state) - set(want))[:3], sorted(set(want) - set(state))[:3]
            raise ArtifactError(f"final/rank{rank}.pt does not hold the README layout's tensors for rank {rank} at "
                                f"expert_parallel_size={sc.ep}: missing {missing}, extra {extra}")
        finals.append(state)
    records = read_rank_records(folder / "observe", sc.world, 1 << 20)
    return Observation(metrics, finals, [exchange_record(r) for r in records])


def exchange_problem(sc: Scenario, obs: Observation) -> str | None:
    """Why the run cannot have exchanged tokens over its expert-parallel groups, or None."""
    if sc.ep == 1:
        return None
    for rank, (calls, sizes) in enumerate(obs.exchanges):
        if len(calls) != sc.steps or min(calls, default=0) < 2 or sc.ep not in sizes:
            return (f"rank {rank}: the observer saw all-to-all calls per step {calls[:8]} over groups of "
                    f"{sizes[:4]} ranks; expert parallelism {sc.ep} exchanges tokens over groups of {sc.ep} "
                    f"ranks in every step")
    return None


def compare(sc: Scenario, obs: Observation) -> judgekit.Verdict:
    """Pass iff the run trained the README's objective: the float64 reference's losses, token
    counts and weights, every copy identical, tokens exchanged over the expert-parallel groups."""
    problem = exchange_problem(sc, obs)
    if problem is not None:
        return judgekit.Verdict("fail", problem)
    ref = train(sc, corpus(sc), initial_weights(sc))
    tokens = [step["tokens"] for step in obs.metrics]
    if tokens != [float(n) for n in ref.tokens]:
        return judgekit.Verdict("fail", f"metrics.jsonl tokens per step {tokens[:6]} are not the step's token "
                                        f"counts {ref.tokens[:6]}")
    spread, spread_at = 0.0, ""
    holders: dict[str, list[State]] = {}
    for state in obs.finals:
        for name, value in state.items():
            holders.setdefault(name, []).append({name: value})
    for name, copies in holders.items():
        worst, _ = replica_spread(copies)
        if not worst <= spread:
            spread, spread_at = worst, name
    param_diff, param_at = 0.0, ""
    for rank, state in enumerate(obs.finals):
        diff, name = max_abs_diff(state, ref.weights, list(state))
        if not diff <= param_diff:
            param_diff, param_at = diff, f"{name} (rank {rank})"
    loss_err, loss_at = max_abs_error([step["loss"] for step in obs.metrics], ref.losses)
    metrics = {"max_abs_param_diff": param_diff, "max_abs_loss_diff": loss_err, "replica_spread": spread,
               "worst_param": param_at, "ref_max_update": ref.max_update}
    checks = (
        Check.within("replica spread", spread, 0.0, f"the copies of {spread_at} differ across ranks"),
        Check.within("max |d weight|", param_diff, sc.param_atol,
                     f"weights differ from the single-process float64 training (every token through its experts, "
                     f"none dropped) at {param_at}; the reference moved weights by at most {ref.max_update:.3e}"),
        Check.within("max |d loss|", loss_err, sc.loss_atol,
                     f"the logged objective leaves the reference's (worst at step {loss_at})"),
    )
    passed = (f"{sc.world} ranks, expert parallelism {sc.ep}, top-{sc.top_k}, slabs of {sc.slab_rows}: weights "
              f"within {param_diff:.2e} and objectives within {loss_err:.2e} of the float64 reference")
    return verdict(checks, metrics, passed)


KIT = judgekit.JudgeKit("MoEAllToAllHang", Scenario.from_request, observe, compare)

if __name__ == "__main__":
    torch.set_num_threads(1)
    judgekit.main(KIT)
