"""Judge phase of TrainFail/MoEExpertGradScale-v1 (trusted: no revision code runs here).

    python /grader/judge.py --scenarios /io/scenarios.json --artifacts /artifacts \
        --run /io/run.json --out-dir /io/outcomes

Regenerates the grader's inputs (``kit/fixtures.py``), trains the float64 single-process
reference (``oracle.py``) and passes a scenario only if the run kept the scenario's expert layout
(saved experts per rank, the observer's MoE layouts), every copy of a parameter is identical
across ranks, and the saved experts, the saved dense parameters and every logged loss are the
reference's (``param_atol``, ``loss_atol``).

Leak canary (must never appear where the agent or the run phase can look):
TRAINFAIL-CANARY-5396806231a99afeaf03db4bbcb78d7d
"""
from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(1, str(Path(__file__).resolve().parent / "kit"))

import judgekit  # noqa: E402 - the harness library
import torch  # noqa: E402
from artifacts import integer  # noqa: E402
from compare import Check, max_abs_diff, max_abs_error, replica_spread, verdict  # noqa: E402
from fixtures import make_inputs  # noqa: E402
from oracle import Reference, reference_run  # noqa: E402
from readers import ArtifactError, State, Step, load_tensors, read_jsonl, read_rank_records, state_dict  # noqa: E402
from scenario import DENSE_NAMES, EXPERT_NAMES, Scenario  # noqa: E402


@dataclass(frozen=True)
class Held:
    """One rank's saved parameters: the dense ones, and its experts by global id."""

    dense: State
    experts: dict[int, State]


@dataclass(frozen=True)
class Observation:
    metrics: list[Step]
    ranks: list[Held]
    #: per rank: the observer's world size, MoE forwards and distinct (ep_size, local, group) layouts
    layouts: list[tuple[int | None, int | None, list[tuple[int, ...]]]]


def named(raw: Any, names: tuple[str, ...], what: str) -> State:
    state = state_dict(raw, what, torch.float64)
    if set(state) != set(names):
        raise ArtifactError(f"{what}: expected parameters {sorted(names)}, found {sorted(state)[:8]}")
    return state


def held(path: Path, sc: Scenario, rank: int) -> Held:
    raw = load_tensors(path, sc.state_limit_bytes)
    if not isinstance(raw, dict) or not isinstance(raw.get("experts"), dict):
        raise ArtifactError(f"{path.name}: not a {{'dense', 'experts'}} dict")
    experts = {}
    for gid, params in raw["experts"].items():
        if isinstance(gid, bool) or not isinstance(gid, int):
            raise ArtifactError(f"rank {rank}: expert id {str(gid)[:20]!r} is not an integer")
        experts[gid] = named(params, EXPERT_NAMES, f"rank {rank} expert {gid}")
    return Held(named(raw.get("dense"), DENSE_NAMES, f"rank {rank} dense"), experts)


def layout(record: dict[str, Any]) -> tuple[int | None, int | None, list[tuple[int, ...]]]:
    """``(world, forwards, layouts)`` of one observer record (closed shape: three integers a layout)."""
    layers = record.get("layers")
    well_formed = isinstance(layers, list) and len(layers) <= 16 and all(
        isinstance(item, list) and len(item) == 3 and all(integer(v) is not None for v in item) for item in layers)
    if not well_formed:
        raise ArtifactError(f"observe/rank{record.get('rank')}.pt: the layers are not [ep_size, local, group] integers")
    return integer(record.get("world")), integer(record.get("forwards")), [tuple(item) for item in layers]


def observe(sc: Scenario, folder: Path) -> Observation:
    """The README's outputs and the observer's records, read as adversarial data."""
    metrics = read_jsonl(folder / "metrics.jsonl", index="step", fields=("loss",), count=sc.steps)
    ranks = [held(folder / "checkpoints" / "final" / f"rank{r}.pt", sc, r) for r in range(sc.world)]
    records = read_rank_records(folder / "observe", sc.world, 1 << 20)
    return Observation(metrics, ranks, [layout(record) for record in records])


def layout_problem(sc: Scenario, obs: Observation) -> str | None:
    """Why the run did not train the scenario's expert-parallel layout, or None."""
    for rank, (state, (world, forwards, layers)) in enumerate(zip(obs.ranks, obs.layouts, strict=True)):
        if sorted(state.experts) != sc.expert_ids(rank):
            return (f"rank {rank} saved experts {sorted(state.experts)[:8]}, the README layout at "
                    f"expert_parallel_size={sc.ep} gives {sc.expert_ids(rank)}")
        if world != sc.world or forwards is None or forwards < sc.steps:
            return (f"rank {rank}: the observer saw world size {world} and {forwards} MoE forwards (expected "
                    f"{sc.world} and at least {sc.steps})")
        if layers != [(sc.ep, sc.local_experts, sc.ep)]:
            return (f"rank {rank}: MoE layers ran as (ep_size, local experts, all-to-all group size) {layers[:4]}, "
                    f"expected {[(sc.ep, sc.local_experts, sc.ep)]}: expert parallelism must stay at "
                    f"expert_parallel_size={sc.ep}")
    return None


def compare(sc: Scenario, obs: Observation) -> judgekit.Verdict:
    inputs = make_inputs(sc)
    return judge(sc, reference_run(sc, inputs), inputs.init, obs)


def judge(sc: Scenario, ref: Reference, init: dict[str, Any], obs: Observation) -> judgekit.Verdict:
    """Pass iff the layout, the replicas, the saved parameters and the losses are the README's."""
    problem = layout_problem(sc, obs)
    if problem is not None:
        return judgekit.Verdict("fail", problem)
    spread, spread_at = replica_spread([held.dense for held in obs.ranks])
    holders: dict[int, list[tuple[int, State]]] = {}
    for rank, state in enumerate(obs.ranks):
        for gid, params in state.experts.items():
            holders.setdefault(gid, []).append((rank, params))
    for gid, copies in holders.items():
        worst, name = replica_spread([params for _, params in copies])
        if not worst <= spread:
            spread, spread_at = worst, f"expert {gid} {name} (ranks {[r for r, _ in copies]})"
    expert_diff, expert_at, moved = 0.0, "", 0.0
    for state in obs.ranks:
        for gid, params in state.experts.items():
            diff, name = max_abs_diff(params, ref.experts[gid])
            if not diff <= expert_diff:
                expert_diff, expert_at = diff, f"expert {gid} {name}"
            start = {k: v.double() for k, v in init["experts"][gid].items()}
            moved = max(moved, max_abs_diff(ref.experts[gid], start)[0])
    dense_diff, dense_at = max_abs_diff(obs.ranks[0].dense, ref.dense)
    losses = [step["loss"] for step in obs.metrics]
    loss_err, loss_at = max_abs_error(losses, ref.losses)
    metrics = {"max_abs_expert_diff": expert_diff, "max_abs_dense_diff": dense_diff, "max_abs_loss_diff": loss_err,
               "replica_spread": spread, "worst_expert": expert_at, "ref_max_expert_update": moved}
    reference = f"the single-process reference after {sc.steps} steps"
    limits = (("replica spread", spread, sc.replica_atol, f"copies of {spread_at} differ across ranks"),
              ("max |d expert|", expert_diff, sc.param_atol, f"expert parameters differ from {reference} at "
               f"{expert_at} (the reference's experts moved at most {moved:.3e})"),
              ("max |d dense|", dense_diff, sc.param_atol, f"dense parameters differ from {reference} at {dense_at}"),
              ("max |d loss|", loss_err, sc.loss_atol, f"logged loss leaves the reference objective (worst at step "
               f"{loss_at})"))
    passed = (f"world {sc.world}, expert_parallel_size {sc.ep}, ZeRO {sc.zero_stage}: parameters within "
              f"{max(expert_diff, dense_diff):.2e} of the single-process reference, losses within {loss_err:.2e}")
    return verdict((Check.within(*limit) for limit in limits), metrics, passed)


KIT = judgekit.JudgeKit("MoEExpertGradScale", Scenario.from_request, observe, compare)

if __name__ == "__main__":
    torch.set_num_threads(1)  # one reduction order for the reference, run after run
    judgekit.main(KIT)
