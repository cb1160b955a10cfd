"""Pass, fail or retry for one scenario: the run's records against the judge's own reference.

Checks, in order (grader/README.md gives the reasons and the measured figures):

1. the observer's records are ZeRO partitions of the README model: every rank holds an equal
   flat fp32 partition, together covering the model with at most DeepSpeed's alignment padding;
2. the first step starts from the grader's initial weights, rounded to bf16 (exactly);
3. every step is a plain SGD step with the gradient it recorded, and the last one lands on the
   weights the pipeline saved in ``final/model.pt`` (``replay_atol``);
4. every recorded gradient matches the judge's float64 gradient of the global-batch mean loss at
   that step's weights within ``grad_rtol`` (relative L2 over the whole model).

Check 4 is the objective; 1-3 tie the records to the training the pipeline really did, so that a
revision rewriting them can at best describe correct training.
"""
from __future__ import annotations

import math

import torch
from judgekit import Verdict  # the harness library

from fixtures import Inputs
from observe import Observation
from oracle import flatten_state, reference_gradient
from scenario import Scenario

#: DeepSpeed pads the flat buffer to a multiple of 2 x world size before partitioning.
ALIGNMENT = 2


def stitch(parts: list[torch.Tensor], total: int) -> torch.Tensor:
    """The ranks' partitions in rank order, cut to the model's length."""
    return torch.cat(parts)[:total]


def rel_l2(got: torch.Tensor, want: torch.Tensor) -> float:
    """``|got - want| / |want|`` in float64 (inf when either is not finite)."""
    got64 = got.to(torch.float64)
    if not bool(torch.isfinite(got64).all()):
        return math.inf
    denom = float(want.norm())
    return float((got64 - want).norm()) / denom if denom > 0 else float((got64 - want).norm())


def judge(sc: Scenario, inputs: Inputs, obs: Observation) -> Verdict:
    """The verdict for one scenario (see the module docstring for the checks)."""
    total, world = sc.parameter_count, sc.devices
    size = obs.finals[0].numel()
    padding = world * size - total
    if not 0 <= padding < ALIGNMENT * world:
        return Verdict("fail", f"the optimizer's parameters are not ZeRO partitions of the model: {world} rank(s) x "
                               f"{size} values for a {total}-value model")
    params = [stitch([obs.params[r][k] for r in range(world)], total) for k in range(sc.steps)]
    grads = [stitch([obs.grads[r][k] for r in range(world)], total) for k in range(sc.steps)]
    final = stitch(obs.finals, total)

    errors = [rel_l2(grads[k], reference_gradient(sc, inputs, k, params[k])) for k in range(sc.steps)]
    worst = max(range(sc.steps), key=lambda k: errors[k])
    replay = []
    for k in range(sc.steps):
        after = params[k + 1] if k + 1 < sc.steps else final
        replay.append(float((params[k].clone().add_(grads[k], alpha=-sc.lr) - after).abs().max()))
    init = flatten_state(sc, inputs.init).to(torch.bfloat16).to(torch.float32)
    init_err = float((params[0] - init).abs().max())
    saved_err = float((flatten_state(sc, obs.final_state) - final).abs().max())
    metrics = {
        "max_grad_rel_err": errors[worst],
        "worst_step": worst,
        "median_grad_rel_err": sorted(errors)[len(errors) // 2],
        "grad_rtol": sc.grad_rtol,
        "max_replay_err": max(replay),
        "init_err": init_err,
        "saved_vs_records": saved_err,
        "world_size": world,
        "accumulation": sc.accumulation,
    }
    if not init_err == 0.0:
        return Verdict("fail", f"the first step does not start from the grader's initial weights in bf16 "
                               f"(max |diff| {init_err:.3g})", metrics)
    bad = [k for k in range(sc.steps) if not replay[k] <= sc.replay_atol]
    if bad:
        return Verdict("fail", f"step {bad[0]} did not apply its own recorded gradient by SGD at lr {sc.lr:g} "
                               f"(max |diff| {replay[bad[0]]:.3g})", metrics)
    if not saved_err <= sc.replay_atol:
        return Verdict("fail", f"final/model.pt is not the weights the last step produced (max |diff| {saved_err:.3g})",
                       metrics)
    if not errors[worst] <= sc.grad_rtol:
        return Verdict("fail", f"step {worst} applied a gradient {errors[worst]:.3g} (relative L2) away from the "
                               f"gradient of the mean loss over its {sc.global_batch}-row global batch "
                               f"(tolerance {sc.grad_rtol:g}; {world} rank(s), {sc.accumulation} micro-batch(es) "
                               f"of {sc.micro_rows} rows)", metrics)
    return Verdict("pass", f"every step applied the global-batch gradient (worst relative L2 {errors[worst]:.3g} "
                           f"at step {worst}, tolerance {sc.grad_rtol:g}); records, replay and saved model agree",
                   metrics)
