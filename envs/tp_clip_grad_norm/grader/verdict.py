"""Comparing the observed run with the TP=1 reference."""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from observe import Observation, gather_full, replicated_spread
from oracle import Reference
from scenario import Scenario


@dataclass
class Verdict:
    """Status, a one-line reason and the measured metrics."""

    status: str
    reason: str
    metrics: dict[str, Any] = field(default_factory=dict)


def _param_diff(ref: Reference, obs: Observation) -> tuple[float, str, str | None]:
    """Max |param - reference| over all full parameters, its name, or a structural problem."""
    keys = [set(s) for s in obs.rank_states]
    if any(k != keys[0] for k in keys[1:]):
        return math.inf, "", "ranks saved different parameter names"
    if keys[0] != set(ref.params):
        missing, extra = set(ref.params) - keys[0], keys[0] - set(ref.params)
        return math.inf, "", (f"checkpoint names differ from the model's: "
                              f"missing={sorted(missing)[:3]} extra={sorted(extra)[:3]}")
    full = gather_full(obs.rank_states)
    worst, where = 0.0, ""
    for name, expected in ref.params.items():
        if full[name].shape != expected.shape:
            shapes = f"{tuple(full[name].shape)} != {tuple(expected.shape)}"
            return math.inf, name, f"{name}: gathered shape {shapes}"
        diff = (full[name] - expected).abs().max().item()
        if not diff <= worst:  # also catches NaN
            worst, where = diff if diff == diff else math.inf, name
    return worst, where, None


def _norm_error(ref: Reference, obs: Observation) -> float:
    """Max relative error of the logged per-step grad norms (inf if any is missing)."""
    worst = 0.0
    for rec, expected in zip(obs.metrics, ref.grad_norms, strict=True):
        got = rec.get("grad_norm")
        if not isinstance(got, (int, float)) or not math.isfinite(got):
            return math.inf
        worst = max(worst, abs(got - expected) / expected)
    return worst


def judge(sc: Scenario, ref: Reference, obs: Observation) -> Verdict:
    """Pass iff parameters, replicas and (when compared) grad norms all match."""
    diff, worst_name, structural = _param_diff(ref, obs)
    spread, spread_name = replicated_spread(obs.rank_states) if structural is None else (math.inf, "")
    norm_err = _norm_error(ref, obs)
    metrics: dict[str, Any] = {
        "max_abs_param_diff": diff, "worst_param": worst_name,
        "grad_norm_max_rel_err": norm_err, "grad_norm_compared": sc.compare_grad_norm,
        "replicated_max_spread": spread, "ref_clipped_steps": ref.clipped_steps,
        "ref_grad_norm_step0": ref.grad_norms[0],
        "run_grad_norm_step0": obs.metrics[0].get("grad_norm"),
    }
    for failed, reason in _checks(sc, ref, structural, diff, worst_name, spread, spread_name, norm_err):
        if failed:
            return Verdict("fail", reason, metrics)
    return Verdict("pass", f"TP={sc.tp} matches the TP=1 reference (max |dparam| {diff:.2e}, "
                           f"grad-norm rel err {norm_err:.2e})", metrics)


def _checks(sc: Scenario, ref: Reference, structural: str | None, diff: float, worst_name: str,
            spread: float, spread_name: str, norm_err: float) -> list[tuple[bool, str]]:
    """Ordered (failed, reason) pairs; the first failing one becomes the verdict."""
    need_clipped = math.ceil(sc.min_clipped_fraction * sc.steps) if sc.clipping else 0
    return [
        (ref.clipped_steps < need_clipped,
         f"scenario guard: reference clipped {ref.clipped_steps}/{sc.steps} steps, needs {need_clipped}"),
        (structural is not None, f"checkpoint unusable: {structural}"),
        (not spread <= sc.replicated_atol,
         f"replicated parameter {spread_name} differs across tensor-parallel ranks by {spread:.3e}"),
        (not diff <= sc.param_atol,
         f"final parameters differ from the TP=1 reference: max |dparam| {diff:.3e} at {worst_name} "
         f"(tolerance {sc.param_atol:g})"),
        (sc.compare_grad_norm and not norm_err <= sc.norm_rtol,
         f"logged grad_norm differs from the reference global norm: max rel err {norm_err:.3e} "
         f"(tolerance {sc.norm_rtol:g})"),
    ]
