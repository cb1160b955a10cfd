"""Comparing what the run left behind with the judge's own float64 reference."""
from __future__ import annotations

import math
from typing import Any

import torch
from observe import Observation, RankState, finite
from oracle import Reference, State
from scenario import EXPERT_NAMES, Scenario

Verdict = tuple[str, str, dict[str, Any]]


def _diff(a: torch.Tensor, b: torch.Tensor) -> float:
    """Max |a - b| (inf for NaN or a shape mismatch)."""
    if a.shape != b.shape:
        return math.inf
    value = (a - b).abs().max().item() if a.numel() else 0.0
    return value if value == value else math.inf


def _layout_problem(sc: Scenario, obs: Observation) -> str | None:
    """Why the saved states or the observed layout are not the scenario's expert-parallel
    layout, or None."""
    want_layer = (sc.ep, sc.local_experts, sc.ep)
    for rank, (state, layout) in enumerate(zip(obs.ranks, obs.layouts)):
        if sorted(state.experts) != sc.expert_ids(rank):
            return (f"rank {rank} saved experts {sorted(state.experts)[:8]}, the README layout at "
                    f"expert_parallel_size={sc.ep} gives {sc.expert_ids(rank)}")
        if layout.world != sc.world or layout.forwards < sc.steps:
            return (f"rank {rank}: the observer saw world size {layout.world} and {layout.forwards} MoE "
                    f"forwards (expected {sc.world} and at least {sc.steps})")
        if layout.layers != [want_layer]:
            return (f"rank {rank}: MoE layers ran as (ep_size, local experts, all-to-all group size) "
                    f"{layout.layers[:4]}, expected {[want_layer]}: expert parallelism must stay at "
                    f"expert_parallel_size={sc.ep}")
    return None


def _replica_spread(obs: Observation) -> tuple[float, str]:
    """Largest difference between copies of the same parameter on different ranks."""
    worst, where = 0.0, ""
    first = obs.ranks[0]
    for rank, state in enumerate(obs.ranks[1:], start=1):
        for name, value in state.dense.items():
            d = _diff(value, first.dense[name])
            if not d <= worst:
                worst, where = d, f"{name} (ranks 0 and {rank})"
    seen: dict[int, tuple[int, State]] = {}
    for rank, state in enumerate(obs.ranks):
        for gid, params in state.experts.items():
            if gid not in seen:
                seen[gid] = (rank, params)
                continue
            other_rank, other = seen[gid]
            for name in EXPERT_NAMES:
                d = _diff(params[name], other[name])
                if not d <= worst:
                    worst, where = d, f"expert {gid} {name} (ranks {other_rank} and {rank})"
    return worst, where


def _final_diffs(ref: Reference, init: dict[str, Any], obs: Observation) -> dict[str, Any]:
    """Distance of the saved parameters to the reference, dense and expert parts apart, and
    the worst expert difference relative to how far that reference parameter moved."""
    dense = max(_diff(obs.ranks[0].dense[n], ref.dense[n]) for n in ref.dense)
    worst_expert, where = 0.0, ""
    moved_max = 0.0
    for state in obs.ranks:
        for gid, params in state.experts.items():
            for name, value in params.items():
                d = _diff(value, ref.experts[gid][name])
                if not d <= worst_expert:
                    worst_expert, where = d, f"expert {gid} {name}"
                moved_max = max(moved_max, _diff(ref.experts[gid][name], init["experts"][gid][name].double()))
    return {"max_abs_expert_diff": worst_expert, "max_abs_dense_diff": dense, "worst_expert": where,
            "ref_max_expert_update": moved_max}


def judge(sc: Scenario, ref: Reference, init: dict[str, Any], obs: Observation) -> Verdict:
    """Pass iff the run kept the scenario's expert-parallel layout, its replicas agree, and its
    losses and saved parameters are those of the float64 single-process reference."""
    metrics: dict[str, Any] = {}
    problem = _layout_problem(sc, obs)
    if problem is not None:
        return "fail", problem, metrics
    metrics.update(_final_diffs(ref, init, obs))
    spread, spread_at = _replica_spread(obs)
    loss_diffs = [abs(r.loss - want) if finite(r.loss) and r.loss is not None else math.inf
                  for r, want in zip(obs.metrics, ref.losses)]
    worst_loss = max(loss_diffs)
    metrics.update({"replica_spread": spread, "max_abs_loss_diff": worst_loss,
                    "first_loss_step_off": next((i for i, d in enumerate(loss_diffs) if not d <= sc.loss_atol), None)})
    checks = [
        (not spread <= sc.replica_atol,
         f"copies of {spread_at} differ across ranks by {spread:.3e} after the last step"),
        (not metrics["max_abs_expert_diff"] <= sc.param_atol,
         f"expert parameters differ from the single-process reference after {sc.steps} steps: max |d| "
         f"{metrics['max_abs_expert_diff']:.3e} at {metrics['worst_expert']} (tolerance {sc.param_atol:g}; "
         f"the reference's experts moved at most {metrics['ref_max_expert_update']:.3e})"),
        (not metrics["max_abs_dense_diff"] <= sc.param_atol,
         f"dense parameters differ from the single-process reference after {sc.steps} steps: max |d| "
         f"{metrics['max_abs_dense_diff']:.3e} (tolerance {sc.param_atol:g})"),
        (not worst_loss <= sc.loss_atol,
         f"logged loss leaves the single-process reference from step {metrics['first_loss_step_off']}: "
         f"max |d| {worst_loss:.3e} (tolerance {sc.loss_atol:g})"),
    ]
    for failed, reason in checks:
        if failed:
            return "fail", reason, metrics
    return "pass", (f"world {sc.world}, expert_parallel_size {sc.ep}, ZeRO {sc.zero_stage}: parameters within "
                    f"{max(metrics['max_abs_expert_diff'], metrics['max_abs_dense_diff']):.2e} of the "
                    f"single-process reference, losses within {worst_loss:.2e}"), metrics
