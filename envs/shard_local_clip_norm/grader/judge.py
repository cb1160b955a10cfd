"""Judge phase of TrainFail/ShardLocalClipNorm-v1 (trusted: no revision code runs here).

    python /grader/judge.py --scenarios /io/scenarios.json --artifacts /artifacts \
        --run /io/run.json --out-dir /io/outcomes

Regenerates the scenario's initial weights and signals (``kit/fixtures.py``) and replays the
README's training in one float64 process (``replay.py``: the global batch's mean cross-entropy,
its gradient clipped as one vector by the chosen norm, plain SGD). The run's artifacts are read
as adversarial data and must agree with it: the shard probe's records (the values every rank's
FSDP shards hold after the last update, assembled into whole parameters), the saved
``model.pt`` and every logged ``loss``.

Leak canary (never where the agent or the run phase can look): TRAINFAIL-CANARY-cfab4f4e847ab0364af6a32f8bd293cc
"""
from __future__ import annotations

import math
import sys
from dataclasses import dataclass, field
from pathlib import Path

GRADER = Path(__file__).resolve().parent
sys.path[1:1] = [str(GRADER), str(GRADER / "kit")]

import judgekit  # noqa: E402 - the harness library
import torch  # noqa: E402
from artifacts import ArtifactError  # noqa: E402
from compare import Check, max_abs_diff, max_rel_error, structure_problem, verdict  # noqa: E402
from readers import read_jsonl, read_rank_records, read_state, tensor  # noqa: E402
from fixtures import initial_state  # noqa: E402
from replay import replay  # noqa: E402
from scenario import Scenario  # noqa: E402

RECORD_LIMIT = 1 << 20


@dataclass(frozen=True)
class Observation:
    shards: dict[str, torch.Tensor]   # whole parameters assembled from every rank's probe record
    forwards: list[int]               # per rank: training forwards the probe saw
    model: dict
    losses: list[float | None]
    metrics: list[object] = field(default_factory=list)


def assemble(records: list[dict], shapes: dict[str, tuple[int, ...]]) -> dict[str, torch.Tensor]:
    flat = {name: torch.full((math.prod(shape),), float("nan"), dtype=torch.float64) for name, shape in shapes.items()}
    for rank, record in enumerate(records):
        pieces = record.get("pieces")
        if not isinstance(pieces, list) or len(pieces) > 10_000:
            raise ArtifactError(f"observe/rank{rank}.pt: no list of shard pieces")
        for piece in pieces:
            if not isinstance(piece, dict):
                raise ArtifactError(f"observe/rank{rank}.pt: a shard piece is not a record")
            name, start = piece.get("name"), piece.get("start")
            values = tensor(piece.get("values"), f"observe/rank{rank}.pt piece", torch.float64).reshape(-1)
            if name not in flat or type(start) is not int or not 0 <= start <= flat[name].numel() - values.numel():
                raise ArtifactError(f"observe/rank{rank}.pt: piece {str(name)[:60]!r} at {start!r} fits no parameter")
            flat[name][start:start + values.numel()] = values
    out = {}
    for name, values in flat.items():
        missing = int(values.isnan().sum())
        if missing:
            raise ArtifactError(f"observe records: {missing} entries of {name} are held by no rank's shard")
        out[name] = values.reshape(shapes[name])
    return out


def observe(sc: Scenario, folder: Path) -> Observation:
    records = read_rank_records(folder / "observe", sc.world, RECORD_LIMIT)
    forwards = []
    for rank, record in enumerate(records):
        if record.get("optimizer_steps") != sc.steps or type(record.get("forwards")) is not int:
            raise ArtifactError(f"observe/rank{rank}.pt: no record of the optimizer's step {sc.steps}")
        forwards.append(record["forwards"])
    shapes = {k: tuple(v.shape) for k, v in initial_state(sc).items()}
    shards = assemble(records, shapes)
    model = read_state(folder / "model.pt", RECORD_LIMIT)
    steps = read_jsonl(folder / "metrics.jsonl", index="step", fields=["loss"], count=sc.steps)
    return Observation(shards, forwards, model, [s["loss"] for s in steps], steps)


def compare(sc: Scenario, obs: Observation) -> judgekit.Verdict:
    ref = replay(sc)
    shapes = {k: tuple(v.shape) for k, v in ref.params.items()}
    checks = []
    want_forwards = sc.steps * sc.accum_steps
    for rank, seen in enumerate(obs.forwards):
        if seen != want_forwards:
            checks.append(Check(True, f"rank {rank}: {seen} training forwards before the last update, "
                                      f"the README's loop runs {want_forwards}"))
    shard_diff, shard_where = max_abs_diff(obs.shards, ref.params)
    checks.append(Check.within("max |shard param - replay|", shard_diff, sc.param_atol,
                               f"the FSDP shards after the last update differ from the replay at {shard_where}"))
    problem = structure_problem(obs.model, shapes, "model.pt")
    if problem:
        checks.append(Check(True, problem))
        diff, where = math.inf, "structure"
    else:
        diff, where = max_abs_diff(obs.model, ref.params)
    checks.append(Check.within("max |param - replay|", diff, sc.param_atol,
                               f"model.pt differs from the replay of the README's update at {where}"))
    loss_err, at = max_rel_error(obs.losses, ref.losses)
    checks.append(Check.within("max rel loss error", loss_err, sc.loss_rtol,
                               f"logged loss differs from the replay at step {at}"))
    binding = sum(c < 1.0 for c in ref.coefs)
    # key figure first, and first in sorted order too (receipts list metrics sorted by name)
    metrics = {"max_abs_param_diff": diff, "max_abs_shard_diff": shard_diff, "max_rel_loss_error": loss_err,
               "tolerance_param_atol": sc.param_atol, "tolerance_loss_rtol": sc.loss_rtol, "steps_clipped": binding,
               "replay_min_clip_coef": min(ref.coefs), "replay_first_grad_norm": ref.norms[0]}
    return verdict(checks, metrics, f"shards, model.pt and losses match the replay (max |dparam| {diff:.1e}; "
                                    f"clipping bound at {binding} of {sc.steps} steps)")


KIT = judgekit.JudgeKit("ShardLocalClipNorm", Scenario.from_request, observe, compare)

if __name__ == "__main__":
    judgekit.main(KIT)
