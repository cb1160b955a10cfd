"""Comparing what the run left behind with the judge's own TP=1 reference."""
from __future__ import annotations

import math
from typing import Any

from judgekit import Verdict  # the harness library
from observe import Observation, gather_full, replicated_spread, shard_shape
from oracle import Reference
from scenario import Scenario


def _structure(ref: Reference, obs: Observation, tp: int) -> str | None:
    """Why the saved states cannot be the model under the README layout, or None."""
    names = set(ref.params)
    for rank, state in enumerate(obs.rank_states):
        if set(state) != names:
            missing, extra = sorted(names - set(state))[:3], sorted(set(state) - names)[:3]
            return f"rank {rank} saved names that differ from the model's: missing={missing} extra={extra}"
        for name, expected in ref.params.items():
            want = shard_shape(name, expected.shape, tp)
            if tuple(state[name].shape) != want:
                return f"rank {rank} {name}: shape {tuple(state[name].shape)}, README layout gives {want}"
    return None


def _param_diff(ref: Reference, obs: Observation) -> tuple[float, str]:
    """Max |param - reference| over all full parameters (inf for NaN) and where."""
    full = gather_full(obs.rank_states)
    worst, where = 0.0, ""
    for name, expected in ref.params.items():
        diff = (full[name] - expected).abs().max().item()
        if not diff <= worst:  # also catches NaN
            worst, where = diff if diff == diff else math.inf, name
    return worst, where


def _rel_error(got: list[float | None], expected: list[float]) -> float:
    """Max relative error of reported per-step values (inf if any is missing or non-finite)."""
    worst = 0.0
    for value, want in zip(got, expected, strict=True):
        if value is None or not math.isfinite(value):
            return math.inf
        worst = max(worst, abs(value - want) / max(abs(want), 1e-12))
    return worst


def _guards(sc: Scenario, ref: Reference) -> str | None:
    """Why the scenario itself does not test what it should (a grader fault), or None."""
    need_clipped = math.ceil(sc.min_clipped_fraction * sc.steps) if sc.clipping else 0
    if ref.clipped_steps < need_clipped:
        return f"scenario guard: reference clipped {ref.clipped_steps}/{sc.steps} steps, needs {need_clipped}"
    if sc.steps - ref.clipped_steps < sc.min_unclipped_steps:
        return (f"scenario guard: reference left {sc.steps - ref.clipped_steps} steps unclipped, "
                f"needs {sc.min_unclipped_steps}")
    return None


def judge(sc: Scenario, ref: Reference, obs: Observation) -> Verdict:
    """Pass iff the structure, replicas, parameters and (when compared) grad norms and losses
    all match the reference."""
    metrics: dict[str, Any] = {"ref_clipped_steps": ref.clipped_steps, "ref_grad_norm_step0": ref.grad_norms[0],
                               "run_grad_norm_step0": obs.metrics[0].grad_norm}
    guard = _guards(sc, ref)
    if guard is not None:
        return Verdict("fail", guard, metrics)
    structural = _structure(ref, obs, sc.tp)
    if structural is not None:
        return Verdict("fail", f"checkpoint unusable: {structural}", metrics)
    spread, spread_name = replicated_spread(obs.rank_states)
    diff, worst_name = _param_diff(ref, obs)
    norm_err = _rel_error([r.grad_norm for r in obs.metrics], ref.grad_norms)
    loss_err = _rel_error([r.loss for r in obs.metrics], ref.losses)
    metrics |= {"max_abs_param_diff": diff, "worst_param": worst_name, "replicated_max_spread": spread,
                "grad_norm_max_rel_err": norm_err, "grad_norm_compared": sc.compare_grad_norm,
                "loss_max_rel_err": loss_err, "loss_compared": sc.compare_loss}
    for failed, reason in _checks(sc, diff, worst_name, spread, spread_name, norm_err, loss_err):
        if failed:
            return Verdict("fail", reason, metrics)
    return Verdict("pass", f"TP={sc.tp} matches the TP=1 reference (max |dparam| {diff:.2e}, "
                           f"grad-norm rel err {norm_err:.2e}, loss rel err {loss_err:.2e})", metrics)


def _checks(sc: Scenario, diff: float, worst_name: str, spread: float, spread_name: str,
            norm_err: float, loss_err: float) -> list[tuple[bool, str]]:
    """Ordered (failed, reason) pairs; the first failing one becomes the verdict."""
    return [
        (not spread <= sc.replicated_atol,
         f"replicated parameter {spread_name} differs across tensor-parallel ranks by {spread:.3e}"),
        (not diff <= sc.param_atol,
         f"final parameters differ from the TP=1 reference: max |dparam| {diff:.3e} at {worst_name} "
         f"(tolerance {sc.param_atol:g})"),
        (sc.compare_grad_norm and not norm_err <= sc.norm_rtol,
         f"logged grad_norm differs from the reference global norm: max rel err {norm_err:.3e} "
         f"(tolerance {sc.norm_rtol:g})"),
        (sc.compare_loss and not loss_err <= sc.loss_rtol,
         f"logged loss differs from the reference loss: max rel err {loss_err:.3e} "
         f"(tolerance {sc.loss_rtol:g})"),
    ]

