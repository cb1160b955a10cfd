"""Judge phase of TrainFail/SchedulerPerProcess-v1 (trusted: no revision code runs here).

    python /grader/judge.py --scenarios /io/scenarios.json --artifacts /artifacts \
        --run /io/run.json --out-dir /io/outcomes

Regenerates the grader's inputs (``kit/fixtures.py``), runs the specification (``oracle.py``)
and passes a scenario only if ``metrics.jsonl`` has exactly updates ``0..T-1`` (epochs as the
README numbers them), every logged learning rate is the schedule's (within ``lr_atol_ratio``
of the peak), and the saved model and every logged loss match the reference (``param_atol``,
``loss_rtol``). The log alone never passes: outputs can at best describe correct training.

Leak canary (must never appear where the agent or the run phase can look):
TRAINFAIL-CANARY-77fda627d44e0ac0b6a078b2f7c01bc0
"""
from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(1, str(Path(__file__).resolve().parent / "kit"))

import judgekit  # noqa: E402 - the harness library
import torch  # noqa: E402
from compare import Check, first_exceeding, max_abs_diff, max_abs_error, max_rel_error, shapes_of, structure_problem, verdict  # noqa: E402
from fixtures import make_inputs  # noqa: E402
from oracle import Reference, reference_run  # noqa: E402
from readers import ArtifactError, State, Step, read_jsonl, read_state  # noqa: E402
from scenario import Scenario  # noqa: E402


@dataclass(frozen=True)
class Observation:
    metrics: list[Step]
    state: State


def observe(sc: Scenario, folder: Path) -> Observation:
    """The README's outputs, read as adversarial data (``ArtifactError`` when unusable)."""
    if not folder.is_dir() or folder.is_symlink() or (folder / "final").is_symlink():
        raise ArtifactError("the run left no usable artifacts folder for this scenario")
    metrics = read_jsonl(folder / "metrics.jsonl", index="update", fields=("epoch", "lr", "loss"),
                         count=sc.total_updates)
    return Observation(metrics, read_state(folder / "final" / "model.pt", sc.state_limit_bytes, dtype=torch.float64))


def compare(sc: Scenario, obs: Observation) -> judgekit.Verdict:
    """The observation against the specification's reference run from the judge's own inputs."""
    return judge(sc, reference_run(sc, make_inputs(sc)), obs)


def judge(sc: Scenario, ref: Reference, obs: Observation) -> judgekit.Verdict:
    """Pass iff the log's updates and epochs, every logged learning rate and loss, and the saved
    model are the specification's."""
    lrs = [step["lr"] for step in obs.metrics]
    lr_err = max_abs_error(lrs, ref.lrs)[0] / sc.lr
    at = first_exceeding(lrs, ref.lrs, sc.lr_atol_ratio * sc.lr)
    epochs = [step["epoch"] for step in obs.metrics]
    want_epochs = [float(k // sc.updates_per_epoch) for k in range(sc.total_updates)]
    metrics = {"lr_max_err_over_peak": lr_err, "first_lr_mismatch_update": at, "total_updates": sc.total_updates}
    problem = structure_problem(obs.state, shapes_of(ref.params), "final/model.pt")
    if problem is not None:
        return judgekit.Verdict("fail", problem, metrics)
    diff, worst = max_abs_diff(obs.state, ref.params)
    loss_err, _ = max_rel_error([step["loss"] for step in obs.metrics], ref.losses)
    metrics |= {"max_abs_param_diff": diff, "worst_param": worst, "loss_max_rel_err": loss_err}
    where = max(at, 0)
    return verdict([
        Check(epochs != want_epochs, f"metrics.jsonl numbers epochs {epochs[:12]}..., the README gives "
              f"{want_epochs[:12]}... ({sc.updates_per_epoch} updates per epoch)"),
        Check.within("lr error / peak", lr_err, sc.lr_atol_ratio,
                     f"logged learning rate leaves the {sc.lr_scheduler_type} schedule (warmup {sc.warmup_steps}, "
                     f"{sc.total_updates} updates, {sc.processes} processes): update {where} used "
                     f"{lrs[where]!r}, the schedule gives {ref.lrs[where]!r}"),
        Check.within("max |dparam|", diff, sc.param_atol, f"final parameters differ from the reference run at {worst}"),
        Check.within("loss rel err", loss_err, sc.loss_rtol, "logged loss differs from the reference run"),
    ], metrics, f"{sc.processes} process(es) match the reference schedule and run (lr err {lr_err:.1e} of peak, "
                f"max |dparam| {diff:.2e}, loss rel err {loss_err:.2e})")


KIT = judgekit.JudgeKit("SchedulerPerProcess", Scenario.from_request, observe, compare)

if __name__ == "__main__":
    torch.set_num_threads(1)  # one reduction order for the reference, run after run
    judgekit.main(KIT)
