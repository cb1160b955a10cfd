"""Comparing what the run left behind with the judge's own TP=1 reference."""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import torch
from judgekit import Verdict, one_line  # the harness library
from observe import Observation, State, gather_full, partition_dim, replicated_spread, shard_shape
from oracle import Reference
from scenario import Scenario


def _structure(ref: Reference, state: State, tp: int, what: str, replicated_only: bool = False) -> str | None:
    """Why a rank's state cannot be the model (or its replicated part) under the README
    layout, or None."""
    names = {n for n in ref.final if partition_dim(n) is None} if replicated_only else set(ref.final)
    if set(state) != names:
        missing, extra = sorted(names - set(state))[:3], sorted(set(state) - names)[:3]
        return f"{what} names differ from the model's: missing={missing} extra={extra}"
    for name in names:
        want = shard_shape(name, ref.final[name].shape, tp)
        if tuple(state[name].shape) != want:
            return f"{what} {name}: shape {tuple(state[name].shape)}, README layout gives {want}"
    return None


def _max_diff(full: State, expected: State) -> tuple[float, str]:
    """Max |full - expected| over the parameters ``full`` holds (inf for NaN) and where."""
    worst, where = 0.0, ""
    for name, got in full.items():
        diff = (got - expected[name]).abs().max().item()
        if not diff <= worst:  # also catches NaN
            worst, where = diff if diff == diff else math.inf, name
    return worst, where


@dataclass(frozen=True)
class StepFinding:
    """The worst step of the observed trajectory for each check."""

    spread: float = 0.0
    spread_at: str = ""
    drift: float = 0.0
    drift_at: str = ""
    first_spread_step: int | None = None
    per_step_spread: tuple[float, ...] = ()


def _trajectory(ref: Reference, obs: Observation) -> StepFinding:
    """Replica spread and distance to the reference at the start of every observed step."""
    worst = StepFinding()
    spreads: list[float] = []
    first: int | None = None
    for step, want in enumerate(ref.states):
        states = [records[step] for records in obs.rank_records]
        spread, spread_name = replicated_spread(states)
        drift, drift_name = _max_diff(gather_full(states), want)
        spreads.append(spread)
        if first is None and not spread <= 0.0:
            first = step
        if not spread <= worst.spread:
            worst = StepFinding(spread, f"{spread_name} at the start of step {step}", worst.drift, worst.drift_at)
        if not drift <= worst.drift:
            worst = StepFinding(worst.spread, worst.spread_at, drift, f"{drift_name} at the start of step {step}")
    return StepFinding(worst.spread, worst.spread_at, worst.drift, worst.drift_at, first, tuple(spreads))


def _guards(sc: Scenario, ref: Reference) -> str | None:
    """Why the scenario itself does not test what it should (a grader fault), or None."""
    need_clipped = math.ceil(sc.min_clipped_fraction * sc.steps) if sc.clipping else 0
    if ref.clipped_steps < need_clipped:
        return f"scenario guard: reference clipped {ref.clipped_steps}/{sc.steps} steps, needs {need_clipped}"
    if sc.steps - ref.clipped_steps < sc.min_unclipped_steps:
        return (f"scenario guard: reference left {sc.steps - ref.clipped_steps} steps unclipped, "
                f"needs {sc.min_unclipped_steps}")
    return None


def _shape_problem(sc: Scenario, ref: Reference, obs: Observation) -> str | None:
    """The first structural problem of the saved states or the observer records, or None."""
    for rank, state in enumerate(obs.rank_states):
        problem = _structure(ref, state, sc.tp, f"rank {rank} checkpoint")
        if problem is not None:
            return f"checkpoint unusable: {problem}"
    for rank, records in enumerate(obs.rank_records):
        for step, state in enumerate(records):
            problem = _structure(ref, state, sc.tp, f"rank {rank} step {step} record",
                                 replicated_only=not sc.records_full(step))
            if problem is not None:
                return f"observer record unusable: {problem}"
    return None


def judge(sc: Scenario, ref: Reference, obs: Observation) -> Verdict:
    """Pass iff replicated parameters are identical on every rank at the start of every step
    and in the saved model, and the trajectory and the saved model match the TP=1 reference."""
    metrics: dict[str, Any] = {"ref_clipped_steps": ref.clipped_steps, "ref_grad_norm_step0": ref.grad_norms[0]}
    guard = _guards(sc, ref)
    if guard is not None:
        return Verdict("fail", guard, metrics)
    problem = _shape_problem(sc, ref, obs)
    if problem is not None:
        return Verdict("fail", problem, metrics)
    found = _trajectory(ref, obs)
    final_spread, final_spread_name = replicated_spread(obs.rank_states)
    expected_final = {k: v.to(torch.bfloat16).float() for k, v in ref.final.items()}
    final_diff, final_name = _max_diff(gather_full(obs.rank_states), expected_final)
    metrics = {"replicated_max_spread": found.spread, **metrics, "worst_spread": found.spread_at,
               "first_step_with_spread": found.first_spread_step,
               "spread_per_step": list(found.per_step_spread),
               "max_abs_master_diff": found.drift, "worst_master": found.drift_at,
               "final_replicated_spread": final_spread, "final_max_abs_diff": final_diff,
               "worst_final": final_name}
    for failed, reason in _checks(sc, found, final_spread, final_spread_name, final_diff, final_name):
        if failed:
            return Verdict("fail", reason, metrics)
    return Verdict("pass", f"TP={sc.tp}: replicas identical at every step, masters within {found.drift:.2e} "
                           f"of the TP=1 reference, saved model within {final_diff:.2e}", metrics)


def _checks(sc: Scenario, found: StepFinding, final_spread: float, final_spread_name: str,
            final_diff: float, final_name: str) -> list[tuple[bool, str]]:
    """Ordered (failed, reason) pairs; the first failing one becomes the verdict."""
    return [
        (not found.spread <= sc.replicated_atol,
         f"replicated parameter {found.spread_at} differs across tensor-parallel ranks by "
         f"{found.spread:.3e} (first seen at the start of step {found.first_spread_step})"),
        (not final_spread <= sc.replicated_atol,
         f"replicated parameter {final_spread_name} differs across tensor-parallel ranks in the saved "
         f"checkpoint by {final_spread:.3e}"),
        (not found.drift <= sc.master_atol,
         f"fp32 master weights leave the TP=1 reference trajectory: max |d| {found.drift:.3e} at "
         f"{found.drift_at} (tolerance {sc.master_atol:g})"),
        (not final_diff <= sc.final_atol,
         f"saved weights differ from the TP=1 reference after the last step: max |d| {final_diff:.3e} at "
         f"{final_name} (tolerance {sc.final_atol:g})"),
    ]
