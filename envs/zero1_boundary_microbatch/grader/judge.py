"""Judge phase of TrainFail/ZeroBoundaryMicrobatch-v1 (trusted: no revision code runs here).

    python /grader/judge.py --scenarios /io/scenarios.json --artifacts /artifacts \
        --run /io/run.json --out-dir /io/outcomes

Stitches the ranks' flat partitions into the weights ``θ_k`` before every step, the gradient
``g_k`` each step applied and the weights after the last, and passes a scenario only if: they
are ZeRO partitions of the README model; ``θ_0`` is the grader's initial weights as the optimizer
holds them, exactly; every step replays as SGD and the last lands on ``final/model.pt``; every
``g_k`` is within ``grad_rtol`` of the judge's own float64 gradient (``oracle.py``). The first
three tie the in-rank records to the training that ran; the last is the objective.

Leak canary (must never appear where the agent or the run phase can look):
TRAINFAIL-CANARY-77ac0c5f9070435502672614e7496618
"""
from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(1, str(Path(__file__).resolve().parent / "kit"))

import judgekit  # noqa: E402 - the harness library
import torch  # noqa: E402
from compare import Check, rel_l2, structure_problem, tensor_diff, verdict  # noqa: E402
from fixtures import make_inputs  # noqa: E402
from oracle import computed_weights, flatten_state, step_gradient  # noqa: E402
from readers import ArtifactError, Step, read_jsonl, read_rank_records, read_state  # noqa: E402
from scenario import Scenario  # noqa: E402

#: DeepSpeed pads the flat buffer to a multiple of 2 x world size before partitioning it.
ALIGNMENT = 2


@dataclass(frozen=True)
class Observation:
    """The metrics records, the saved fp32 model, and per rank the observer's flat partitions."""

    metrics: list[Step]
    saved: dict[str, torch.Tensor]
    params: list[list[torch.Tensor]]
    grads: list[list[torch.Tensor]]
    finals: list[torch.Tensor]


def flat32(value: object, what: str) -> torch.Tensor:
    """A 1-D float32 CPU tensor (the observer's layout), else ``ArtifactError``."""
    if not isinstance(value, torch.Tensor) or value.dtype != torch.float32 or value.dim() != 1 or value.is_sparse:
        raise ArtifactError(f"{what} is not a flat float32 tensor")
    return value.contiguous()


def partitions(value: object, what: str, count: int, size: int) -> list[torch.Tensor]:
    """``count`` flat partitions of ``size`` values each."""
    if not isinstance(value, list) or len(value) != count:
        raise ArtifactError(f"{what}: does not hold {count} steps")
    out = [flat32(item, f"{what} step {k}") for k, item in enumerate(value)]
    if any(t.numel() != size for t in out):
        raise ArtifactError(f"{what}: partition sizes differ between steps")
    return out


def observe(sc: Scenario, folder: Path) -> Observation:
    """The README's outputs and the observer's records, read as adversarial data."""
    if not folder.is_dir() or folder.is_symlink():
        raise ArtifactError("the run left no usable artifacts folder for this scenario")
    records = read_rank_records(folder / "observe", sc.devices, sc.record_limit_bytes)
    finals = [flat32(rec.get("final"), f"rank{r}.pt final weights") for r, rec in enumerate(records)]
    if len({t.numel() for t in finals}) != 1:
        raise ArtifactError("observer records: ranks hold partitions of different sizes")
    size = finals[0].numel()
    return Observation(
        metrics=read_jsonl(folder / "metrics.jsonl", index="step", fields=(), count=sc.steps),
        saved=read_state(folder / "final" / "model.pt", sc.state_limit_bytes),
        params=[partitions(rec.get("params"), f"rank{r}.pt weights", sc.steps, size) for r, rec in enumerate(records)],
        grads=[partitions(rec.get("grads"), f"rank{r}.pt gradients", sc.steps, size) for r, rec in enumerate(records)],
        finals=finals,
    )


def compare(sc: Scenario, obs: Observation) -> judgekit.Verdict:
    """The records against the judge's own float64 reference from its own inputs."""
    total, world = sc.parameter_count, sc.devices
    size = obs.finals[0].numel()
    layout = f"{world} rank(s) x {size} values for a {total}-value model"
    problem = structure_problem(obs.saved, dict(sc.shapes), "final/model.pt")
    if problem is not None or not 0 <= world * size - total < ALIGNMENT * world:
        why = problem or f"the optimizer's parameters are not ZeRO partitions of the model: {layout}"
        return judgekit.Verdict("fail", why, {"partition_values": size})
    inputs = make_inputs(sc)
    theta = [torch.cat([obs.params[r][k] for r in range(world)])[:total] for k in range(sc.steps)]
    grads = [torch.cat([obs.grads[r][k] for r in range(world)])[:total] for k in range(sc.steps)]
    after = [*theta[1:], torch.cat(obs.finals)[:total]]
    errors = [rel_l2(grads[k], step_gradient(sc, inputs, k, theta[k])) for k in range(sc.steps)]
    replay = [tensor_diff(after[k], theta[k] - sc.lr * grads[k]) for k in range(sc.steps)]
    worst, late = max(range(sc.steps), key=lambda k: errors[k]), max(range(sc.steps), key=lambda k: replay[k])
    init_err = tensor_diff(theta[0], computed_weights(sc, flatten_state(sc, inputs.init)))
    saved_err = tensor_diff(flatten_state(sc, obs.saved), after[-1])
    metrics = {"max_grad_rel_err": errors[worst], "grad_rtol": sc.grad_rtol, "worst_step": worst,
               "median_grad_rel_err": sorted(errors)[len(errors) // 2], "max_replay_err": replay[late],
               "replay_atol": sc.replay_atol, "init_err": init_err, "saved_vs_records": saved_err,
               "world_size": world, "accumulation": sc.accumulation}  # fmt: skip
    return verdict([
        Check(init_err != 0.0, f"the first step does not start from the grader's initial weights as the optimizer "
              f"holds them (max |diff| {init_err:.3g})"),
        Check.within("replay", replay[late], sc.replay_atol,
                     f"step {late} did not apply its own recorded gradient by SGD at lr {sc.lr:g}"),
        Check.within("saved vs records", saved_err, sc.replay_atol,
                     "final/model.pt is not the weights the last step produced"),
        Check.within("grad rel L2", errors[worst], sc.grad_rtol,
                     f"step {worst} applied a gradient away from the gradient of the mean loss over its "
                     f"{sc.global_batch}-row global batch ({world} rank(s), {sc.accumulation} micro-batch(es) of "
                     f"{sc.micro_rows} rows)"),
    ], metrics, f"every step applied the global-batch gradient (worst relative L2 {errors[worst]:.3g} at step "
                f"{worst}); records, replay and saved model agree")


def main() -> None:
    """The protocol's judge phase over this case's scenarios."""
    torch.set_num_threads(1)  # one reduction order for the float64 reference, run after run
    judgekit.main(judgekit.JudgeKit("ZeroBoundaryMicrobatch", Scenario.from_request, observe, compare))


if __name__ == "__main__":
    main()
