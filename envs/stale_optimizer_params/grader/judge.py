"""Judge phase of TrainFail/StaleOptimizerParams-v1 (trusted: no revision code runs here).

    python /grader/judge.py --scenarios /io/scenarios.json --artifacts /artifacts \
        --run /io/run.json --out-dir /io/outcomes

Regenerates the scenario's initial weights and table (``kit/fixtures.py``) and trains the
README's specification in one process in float64 (``spec.py``). The run's artifacts are read
as adversarial data: every rank's holding-probe record (after the last step: each model
parameter's piece, whether the optimizer holds that tensor and with which weight decay) is
assembled into the model the forward read, which must be the saved ``model.pt``; every trainable
parameter must be held by the optimizer; ``model.pt`` must be the reference's parameters and
every logged loss the reference's loss.

Leak canary (never where the agent or the run phase can look): TRAINFAIL-CANARY-14afc6cb777bcf3e68392d5c2b1cec91
"""
from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(1, str(Path(__file__).resolve().parent / "kit"))
sys.path.insert(1, str(Path(__file__).resolve().parent))

import judgekit  # noqa: E402 - the harness library
import torch  # noqa: E402
from artifacts import ArtifactError  # noqa: E402
from compare import Check, max_abs_diff, max_abs_error, structure_problem, verdict  # noqa: E402
from fixtures import layout  # noqa: E402
from readers import read_jsonl, read_rank_records, read_state, tensor  # noqa: E402
from scenario import Scenario  # noqa: E402
from spec import reference  # noqa: E402


@dataclass(frozen=True)
class Observation:
    read: dict[str, torch.Tensor]        # the model the forward read, assembled from the ranks
    decay: dict[str, float]              # weight decay of the group holding it (-1: not held)
    orphans: int                         # tensors the optimizer holds that the model does not
    model: dict[str, torch.Tensor]       # model.pt
    losses: list[float | None]
    metrics: list[object] = field(default_factory=list)


def assemble(sc: Scenario, records: list[dict]) -> dict[str, torch.Tensor]:
    shapes = layout(sc)
    out = {}
    for name, shape in shapes.items():
        parts = []
        for rank, rec in enumerate(records):
            kinds, pieces = rec.get("kinds"), rec.get("pieces")
            if not isinstance(kinds, dict) or not isinstance(pieces, dict) or name not in pieces:
                raise ArtifactError(f"observe/rank{rank}.pt: no record of {name}")
            parts.append((kinds.get(name), tensor(pieces[name], f"observe/rank{rank}.pt {name}")))
        if all(kind == "shard0" for kind, _ in parts):
            whole = torch.cat([t for _, t in parts], 0) if parts[0][1].dim() else parts[0][1]
        elif all(kind == "full" for kind, _ in parts):
            whole = parts[0][1]
        else:
            raise ArtifactError(f"observe: {name} recorded in mixed layouts")
        if tuple(whole.shape) != shape:
            raise ArtifactError(f"observe: {name} assembles to {tuple(whole.shape)}, the model holds {shape}")
        out[name] = whole
    return out


def observe(sc: Scenario, folder: Path) -> Observation:
    records = read_rank_records(folder / "observe", sc.world, 1 << 20)
    for rank, rec in enumerate(records):
        if rec.get("steps") != sc.steps:
            raise ArtifactError(f"observe/rank{rank}.pt: the optimizer stepped {rec.get('steps')!r} times "
                                f"by the record, expected {sc.steps}")
    decay_raw = records[0].get("decay")
    if not isinstance(decay_raw, dict) or not all(isinstance(v, float) for v in decay_raw.values()):
        raise ArtifactError("observe/rank0.pt: no holding record")
    orphans = records[0].get("orphans")
    if type(orphans) is not int:
        raise ArtifactError("observe/rank0.pt: no orphan count")
    model = read_state(folder / "model.pt", 1 << 20)
    steps = read_jsonl(folder / "metrics.jsonl", index="step", fields=("loss",), count=sc.steps)
    return Observation(assemble(sc, records), dict(decay_raw), orphans, model, [s["loss"] for s in steps], list(steps))


def compare(sc: Scenario, obs: Observation) -> judgekit.Verdict:
    ref = reference(sc)
    shapes = layout(sc)
    checks = []
    problem = structure_problem(obs.model, shapes, "model.pt")
    if problem:
        return verdict([Check(True, problem)], {"max_abs_param_diff": float("inf")}, "")
    unheld = [n for n in ref.trainable if obs.decay.get(n, -1.0) < 0]
    held_diff, held_where = max_abs_diff(obs.model, obs.read)
    diff, where = max_abs_diff(obs.model, {k: v.float() for k, v in ref.params.items()})
    loss_err, loss_at = max_abs_error(obs.losses, ref.losses)
    stuck = [n for n in ref.trainable if torch.equal(obs.model[n].double(), ref.initial[n])]
    checks.append(Check.within("max |model.pt - model the forward read|", held_diff, 0.0,
                               f"model.pt is not the model the training forward read ({held_where})"))
    checks.append(Check(bool(unheld), f"{len(unheld)} of {len(ref.trainable)} trainable parameters the forward "
                                      f"reads are not held by the optimizer that steps (e.g. {unheld[:3]})"))
    checks.append(Check.within("max |param - reference|", diff, sc.param_atol,
                               f"model.pt differs from the specified training at {where}"
                               + (f"; {len(stuck)} trainable tensors never moved" if stuck else "")))
    checks.append(Check.within("max |loss - reference|", loss_err, sc.loss_atol,
                               f"logged loss of step {loss_at} differs from the specified training"))
    metrics = {"max_abs_param_diff": diff, "max_abs_loss_diff": loss_err, "unheld_trainable": len(unheld),
               "optimizer_orphans": obs.orphans, "never_moved": len(stuck)}
    return verdict(checks, metrics, f"every trainable parameter held and trained as specified "
                                    f"(max |dparam| {diff:.1e}, max |dloss| {loss_err:.1e})")


KIT = judgekit.JudgeKit("StaleOptimizerParams", Scenario.from_request, observe, compare)

if __name__ == "__main__":
    judgekit.main(KIT)
