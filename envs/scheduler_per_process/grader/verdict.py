"""Comparing what the run left behind with the judge's own reference run."""
from __future__ import annotations

import math
from typing import Any

from judgekit import Verdict  # the harness library
from observe import Observation
from oracle import Reference
from scenario import Scenario


def _structure(ref: Reference, obs: Observation) -> str | None:
    """Why the saved state cannot be the README's model, or None."""
    names = set(ref.params)
    if set(obs.state) != names:
        missing, extra = sorted(names - set(obs.state))[:3], sorted(set(obs.state) - names)[:3]
        return f"saved names differ from the model's: missing={missing} extra={extra}"
    for name, expected in ref.params.items():
        if tuple(obs.state[name].shape) != tuple(expected.shape):
            return f"{name}: shape {tuple(obs.state[name].shape)}, the model has {tuple(expected.shape)}"
    return None


def _param_diff(ref: Reference, obs: Observation) -> tuple[float, str]:
    """Max |param - reference| over all parameters (inf for NaN) and where."""
    worst, where = 0.0, ""
    for name, expected in ref.params.items():
        diff = (obs.state[name] - expected).abs().max().item()
        if not diff <= worst:  # also catches NaN
            worst, where = diff if diff == diff else math.inf, name
    return worst, where


def _rel_error(got: list[float | None], expected: list[float]) -> float:
    """Max relative error of reported per-update values (inf if any is missing or non-finite)."""
    worst = 0.0
    for value, want in zip(got, expected, strict=True):
        if value is None or not math.isfinite(value):
            return math.inf
        worst = max(worst, abs(value - want) / max(abs(want), 1e-12))
    return worst


def _lr_error(got: list[float | None], expected: list[float], peak: float) -> tuple[float, int]:
    """Max |lr - spec| / peak lr over the updates (inf if missing) and the first update where
    it exceeds nothing but rounding (-1 if none)."""
    worst, first = 0.0, -1
    for update, (value, want) in enumerate(zip(got, expected, strict=True)):
        err = math.inf if value is None or not math.isfinite(value) else abs(value - want) / peak
        if err > worst:
            worst = err
        if first < 0 and err > 1e-12:
            first = update
    return worst, first


def judge(sc: Scenario, ref: Reference, obs: Observation) -> Verdict:
    """Pass iff the saved model, every logged learning rate and every logged loss match the
    reference run of the specification."""
    lrs = [r.lr for r in obs.metrics]
    lr_err, first = _lr_error(lrs, ref.lrs, sc.lr)
    metrics: dict[str, Any] = {"lr_max_err_over_peak": lr_err, "first_lr_mismatch_update": first}
    structural = _structure(ref, obs)
    if structural is not None:
        return Verdict("fail", f"final/model.pt unusable: {structural}", metrics)
    diff, worst_name = _param_diff(ref, obs)
    loss_err = _rel_error([r.loss for r in obs.metrics], ref.losses)
    metrics |= {"max_abs_param_diff": diff, "worst_param": worst_name, "loss_max_rel_err": loss_err,
                "total_updates": sc.total_updates}
    if first >= 0:
        metrics |= {"run_lr_at_first_mismatch": lrs[first], "spec_lr_at_first_mismatch": ref.lrs[first]}
    for failed, reason in _checks(sc, ref, lrs, lr_err, first, diff, worst_name, loss_err):
        if failed:
            return Verdict("fail", reason, metrics)
    return Verdict("pass", f"{sc.processes} process(es) match the reference schedule and run (lr err "
                           f"{lr_err:.1e} of peak, max |dparam| {diff:.2e}, loss rel err {loss_err:.2e})",
                   metrics)


def _checks(sc: Scenario, ref: Reference, lrs: list[float | None], lr_err: float, first: int,
            diff: float, worst_name: str, loss_err: float) -> list[tuple[bool, str]]:
    """Ordered (failed, reason) pairs; the first failing one becomes the verdict."""
    at = max(first, 0)
    return [
        (not lr_err <= sc.lr_atol_ratio,
         f"logged learning rate leaves the {sc.lr_scheduler_type} schedule (warmup {sc.warmup_steps}, "
         f"{sc.total_updates} updates, {sc.processes} processes): update {at} used {lrs[at]!r}, "
         f"the schedule gives {ref.lrs[at]!r}"),
        (not diff <= sc.param_atol,
         f"final parameters differ from the reference run: max |dparam| {diff:.3e} at {worst_name} "
         f"(tolerance {sc.param_atol:g})"),
        (not loss_err <= sc.loss_rtol,
         f"logged loss differs from the reference run: max rel err {loss_err:.3e} (tolerance {sc.loss_rtol:g})"),
    ]
