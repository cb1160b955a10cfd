"""Comparing what the run left behind with the specified data-parallel training."""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import torch
from judgekit import Verdict, one_line  # the harness library
from fixtures import Inputs, State
from observe import Observation
from oracle import spec_gradient
from scenario import Scenario

#: Gradient norms below this count as zero when the relative error is taken.
GRAD_FLOOR = 1e-6


def max_diff(a: State, b: State) -> tuple[float, str]:
    """Max |a - b| over the names of ``b`` (inf for NaN or a shape mismatch) and where."""
    worst, where = 0.0, ""
    for name, want in b.items():
        got = a[name]
        diff = (got - want).abs().max().item() if got.shape == want.shape else math.inf
        if not diff <= worst:  # also catches NaN
            worst, where = diff if diff == diff else math.inf, name
    return worst, where


def _structure(sc: Scenario, obs: Observation) -> str | None:
    """Why a record or the saved model is not the README's model, or None."""
    shapes = sc.shapes
    states = [("saved checkpoint", obs.saved)]
    for r, rec in enumerate(obs.ranks):
        states += [(f"rank {r} params {k}", s) for k, s in enumerate(rec.params)]
        states += [(f"rank {r} grads {k}", s) for k, s in enumerate(rec.grads)]
        states.append((f"rank {r} final", rec.final))
    for what, state in states:
        if set(state) != set(shapes):
            missing, extra = sorted(set(shapes) - set(state))[:3], sorted(set(state) - set(shapes))[:3]
            return f"{what}: parameter names differ from the model's: missing={missing} extra={extra}"
        for name, shape in shapes.items():
            if tuple(state[name].shape) != shape:
                return f"{what}: {name} has shape {tuple(state[name].shape)}, the model's is {shape}"
    return None


@dataclass(frozen=True)
class Findings:
    """The worst figure of each check over ranks and steps."""

    spread: float
    spread_at: str
    first_spread_step: int | None
    spread_per_step: list[float]
    grad_err: float
    grad_at: str
    grad_err_per_step: list[float]
    replay: float
    replay_at: str
    init_diff: float
    saved_diff: float


def _replicas(obs: Observation, sc: Scenario) -> tuple[float, str, int | None, list[float]]:
    """Largest difference of a parameter between rank 0 and another rank, per step start and
    after the last step."""
    worst, where, first, per_step = 0.0, "", None, []
    states = [[rec.params[k] for rec in obs.ranks] for k in range(sc.steps)]
    states.append([rec.final for rec in obs.ranks])
    for k, ranks in enumerate(states):
        step_worst = 0.0
        for r, state in enumerate(ranks[1:], start=1):
            diff, name = max_diff(state, ranks[0])
            if not diff <= step_worst:
                step_worst = diff
            if not diff <= worst:
                label = f"the start of step {k}" if k < sc.steps else "the end of training"
                worst, where = diff, f"{name} (rank {r} vs rank 0) at {label}"
        per_step.append(step_worst)
        if first is None and not step_worst <= sc.replica_atol:
            first = k
    return worst, where, first, per_step


def _gradients(obs: Observation, sc: Scenario, inputs: Inputs) -> tuple[float, str, list[float]]:
    """Largest relative L2 error of one parameter's gradient, on any rank, against the
    float64 global-batch gradient at rank 0's recorded weights."""
    worst, where, per_step = 0.0, "", []
    for k in range(sc.steps):
        _, want = spec_gradient(sc, inputs, obs.ranks[0].params[k], k)
        step_worst = 0.0
        for r, rec in enumerate(obs.ranks):
            for name, g in want.items():
                norm = max(g.norm().item(), GRAD_FLOOR)
                err = (rec.grads[k][name].double() - g).norm().item() / norm
                if not err <= step_worst:
                    step_worst = err if err == err else math.inf
                if not err <= worst:
                    worst, where = (err if err == err else math.inf), f"{name} on rank {r} at step {k}"
        per_step.append(step_worst)
    return worst, where, per_step


def _replay(obs: Observation, sc: Scenario) -> tuple[float, str]:
    """Largest gap between a recorded step's result and SGD applied to its recorded state."""
    worst, where = 0.0, ""
    for r, rec in enumerate(obs.ranks):
        nexts = [*rec.params[1:], rec.final]
        for k in range(sc.steps):
            sgd = {n: p.add(rec.grads[k][n], alpha=-sc.lr) for n, p in rec.params[k].items()}
            diff, name = max_diff(nexts[k], sgd)
            if not diff <= worst:
                worst, where = diff, f"{name} on rank {r} after step {k}"
    return worst, where


def findings(sc: Scenario, inputs: Inputs, obs: Observation) -> Findings:
    """Every check's worst figure."""
    spread, spread_at, first, per_step = _replicas(obs, sc)
    grad_err, grad_at, grad_per_step = _gradients(obs, sc, inputs)
    replay, replay_at = _replay(obs, sc)
    init_diff = max(max_diff(rec.params[0], inputs.init)[0] for rec in obs.ranks)
    saved_diff, _ = max_diff(obs.saved, obs.ranks[0].final)
    return Findings(spread, spread_at, first, per_step, grad_err, grad_at, grad_per_step, replay, replay_at,
                    init_diff, saved_diff)


def judge(sc: Scenario, inputs: Inputs, obs: Observation) -> Verdict:
    """Pass iff every rank starts training from the grader's weights, holds the same weights
    at every step, applies the global-batch gradient of the specified objective at every step
    by plain SGD, and the saved model is the last state."""
    problem = _structure(sc, obs)
    if problem is not None:
        return Verdict("fail", f"records unusable: {problem}")
    f = findings(sc, inputs, obs)
    metrics: dict[str, Any] = {
        "max_replica_spread": f.spread, "max_grad_rel_err": f.grad_err, "worst_spread": f.spread_at,
        "first_step_with_spread": f.first_spread_step, "spread_per_step": f.spread_per_step,
        "worst_grad": f.grad_at, "grad_rel_err_per_step": f.grad_err_per_step,
        "max_replay_diff": f.replay, "worst_replay": f.replay_at, "init_diff": f.init_diff,
        "saved_vs_final_diff": f.saved_diff,
    }
    checks = [
        (not f.init_diff <= 0.0,
         f"the first recorded step does not start from the grader's initial weights (max |d| {f.init_diff:.3e})"),
        (not f.spread <= sc.replica_atol,
         f"parameter {f.spread_at} differs across data-parallel ranks by {f.spread:.3e} "
         f"(first seen at step {f.first_spread_step})"),
        (not f.grad_err <= sc.grad_rtol,
         f"the gradient applied is not the global-batch gradient of the objective: relative error "
         f"{f.grad_err:.3e} at {f.grad_at} (tolerance {sc.grad_rtol:g})"),
        (not f.replay <= sc.replay_atol,
         f"the weights change between steps by more than SGD with the applied gradient: max |d| "
         f"{f.replay:.3e} at {f.replay_at} (tolerance {sc.replay_atol:g})"),
        (not f.saved_diff <= 0.0,
         f"the saved checkpoint is not the weights after the last step (max |d| {f.saved_diff:.3e})"),
    ]
    for failed, reason in checks:
        if failed:
            return Verdict("fail", reason, metrics)
    return Verdict("pass", f"{sc.world} rank(s): replicas identical at every step, gradients within "
                           f"{f.grad_err:.2e} of the global-batch gradient, SGD replays within {f.replay:.1e}",
                   metrics)
