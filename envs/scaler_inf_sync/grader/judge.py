"""Judge phase of TrainFail/ScalerInfSync-v1 (trusted: no revision code runs here).

    python /grader/judge.py --scenarios /io/scenarios.json --artifacts /artifacts \
        --run /io/run.json --out-dir /io/outcomes

Regenerates the scenario's initial weights and table (``kit/fixtures.py``) and replays the
README's training in one process (``replay.py``): each rank's micro-batch under float16 autocast
with the loss scaled, the ranks' gradients averaged, the step skipped everywhere when that
gradient holds an inf/nan anywhere, otherwise unscaled and applied with SGD; the scale backs off
and grows by the README's rules. The run's artifacts are read as adversarial data and must agree
with it: every rank's probe record (the iterations at which its optimizer stepped), every
rank's logged ``scale``/``skipped``, and the saved ``model.pt`` (the shards' parameters).

Leak canary (never where the agent or the run phase can look): TRAINFAIL-CANARY-34c8422ac45340075c223d7034a65f70
"""
from __future__ import annotations

import json
import sys
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(1, str(Path(__file__).resolve().parent / "kit"))
sys.path.insert(1, str(Path(__file__).resolve().parent))

import judgekit  # noqa: E402 - the harness library
from artifacts import ArtifactError, read_bounded  # noqa: E402
from compare import Check, max_abs_diff, structure_problem, verdict  # noqa: E402
from readers import read_rank_records, read_state  # noqa: E402
from replay import Replay, replay  # noqa: E402
from scenario import Scenario  # noqa: E402

LOG_LIMIT = 1 << 20


@dataclass(frozen=True)
class Observation:
    applied: list[list[int]]           # per rank: iterations whose optimizer step ran (probe)
    scales: list[list[float]]          # per rank: logged scale after each step
    skipped: list[list[bool]]          # per rank: logged skipped
    model: dict
    metrics: list[object] = field(default_factory=list)


def read_log(path: Path, steps: int) -> tuple[list[float], list[bool]]:
    try:
        text = read_bounded(path, LOG_LIMIT).decode("utf-8")
    except UnicodeDecodeError:
        raise ArtifactError(f"{path.name} is not UTF-8") from None
    scales, skipped = [], []
    for number, line in enumerate(l for l in text.splitlines() if l.strip()):
        try:
            raw = json.loads(line)
        except (ValueError, RecursionError):
            raise ArtifactError(f"{path.name} line {number + 1} is not JSON") from None
        if not isinstance(raw, dict) or raw.get("step") != number or isinstance(raw.get("step"), bool):
            raise ArtifactError(f"{path.name} line {number + 1}: expected step {number}")
        scale, skip = raw.get("scale"), raw.get("skipped")
        if isinstance(scale, bool) or not isinstance(scale, int | float) or not isinstance(skip, bool):
            raise ArtifactError(f"{path.name} line {number + 1}: scale/skipped missing")
        scales.append(float(scale))
        skipped.append(skip)
    if len(scales) != steps:
        raise ArtifactError(f"{path.name} has {len(scales)} steps, expected {steps}")
    return scales, skipped


def observe(sc: Scenario, folder: Path) -> Observation:
    records = read_rank_records(folder / "observe", sc.world, 1 << 20)
    applied = []
    for rank, record in enumerate(records):
        steps, its = record.get("applied"), record.get("iterations")
        if its != sc.steps or not isinstance(steps, list) or not all(type(s) is int for s in steps):
            raise ArtifactError(f"observe/rank{rank}.pt: {its!r} training iterations recorded, expected {sc.steps}")
        applied.append(steps)
    logs = [read_log(folder / f"rank{r}.jsonl", sc.steps) for r in range(sc.world)]
    model = read_state(folder / "model.pt", 1 << 20)
    return Observation(applied, [s for s, _ in logs], [k for _, k in logs], model)


def first_disagreement(got: list, want: list) -> int | None:
    return next((i for i, (a, b) in enumerate(zip(got, want, strict=True)) if a != b), None)


def compare(sc: Scenario, obs: Observation) -> judgekit.Verdict:
    ref: Replay = replay(sc)
    want_applied = [s for s, taken in enumerate(ref.taken) if taken]
    checks = []
    for rank in range(sc.world):
        if obs.applied[rank] != want_applied:
            extra = sorted(set(obs.applied[rank]) - set(want_applied))
            missing = sorted(set(want_applied) - set(obs.applied[rank]))
            checks.append(Check(True, f"rank {rank} of {sc.world}: optimizer stepped at {obs.applied[rank]}, "
                                      f"the README's rule takes steps {want_applied} (extra {extra}, missing {missing})"))
    for rank in range(sc.world):
        at = first_disagreement(obs.scales[rank], ref.scales)
        if at is not None:
            checks.append(Check(True, f"rank {rank}: logged scale {obs.scales[rank][at]:g} after step {at}, "
                                      f"the README's rule gives {ref.scales[at]:g}"))
        at = first_disagreement(obs.skipped[rank], [not t for t in ref.taken])
        if at is not None:
            checks.append(Check(True, f"rank {rank}: logged skipped={obs.skipped[rank][at]} at step {at}, "
                                      f"expected {not ref.taken[at]}"))
    shapes = {k: tuple(v.shape) for k, v in ref.params.items()}
    problem = structure_problem(obs.model, shapes, "model.pt")
    if problem:
        checks.append(Check(True, problem))
        diff, where = float("inf"), "structure"
    else:
        diff, where = max_abs_diff(obs.model, ref.params)
    checks.append(Check.within("max |param - replay|", diff, sc.param_atol,
                               f"model.pt differs from the replay of the README's training at {where}"))
    metrics = {"max_abs_param_diff": diff, "steps_skipped": sum(not t for t in ref.taken),
               "rank_step_mismatches": sum(obs.applied[r] != want_applied for r in range(sc.world)),
               "scale_after_last_step": ref.scales[-1]}
    return verdict(checks, metrics, f"every rank took steps {want_applied}; scales and model match the replay "
                                    f"(max |dparam| {diff:.1e})")


KIT = judgekit.JudgeKit("ScalerInfSync", Scenario.from_request, observe, compare)

if __name__ == "__main__":
    judgekit.main(KIT)
