"""Judge phase of TrainFail/EpochReshuffle-v1 (trusted: no revision code runs here).

    python /grader/judge.py --scenarios /io/scenarios.json --artifacts /artifacts \
        --run /io/run.json --out-dir /io/outcomes

Draws the grader's table and starting weights again (``kit/fixtures.py``), builds the README's
data order (``replay.plan``: DistributedSampler per rank with set_epoch per epoch, cut into
batches) and passes a scenario only if

1. every rank's training forwards received exactly the windows of its planned batches, step by
   step (the batch tap's records; rows named by their bytes against the judge's own table);
2. the saved ``model.pt`` is the float64 replay of that plan (relative L2 of all parameters
   within ``param_rtol``), which does not rest on the records.

Leak canary (never where the agent or the run phase can look):
TRAINFAIL-CANARY-358e5859ee3fd6076c270c309d0cf9ab
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(1, str(Path(__file__).resolve().parent / "kit"))

import judgekit  # noqa: E402 - the harness library
import torch  # noqa: E402
from artifacts import ArtifactError, integer  # noqa: E402
from compare import Check, rel_l2, structure_problem, verdict  # noqa: E402
from fixtures import draw, layout  # noqa: E402
from readers import State, read_rank_records, read_state, tensor  # noqa: E402
from replay import Plan, plan, train  # noqa: E402
from scenario import Scenario  # noqa: E402


@dataclass(frozen=True)
class Observation:
    model: State
    #: ``batches[rank]``: the rows of each training forward of that rank, float32 matrices.
    batches: list[list[torch.Tensor]]
    metrics: list[Any] = field(default_factory=list)  # the per-step log is not judged


def split_record(record: dict[str, Any], what: str, sc: Scenario) -> list[torch.Tensor]:
    windows = tensor(record.get("windows"), f"{what} windows")
    sizes = record.get("sizes")
    if not isinstance(sizes, list) or any(integer(s) is None or integer(s) < 1 for s in sizes):
        raise ArtifactError(f"{what}: sizes is not a list of positive counts")
    if windows.dim() != 2 or windows.shape[1] != sc.features or windows.shape[0] != sum(sizes):
        raise ArtifactError(f"{what}: windows is not [sum(sizes), {sc.features}]")
    return list(torch.split(windows, [int(s) for s in sizes]))


def observe(sc: Scenario, folder: Path) -> Observation:
    """The saved model and every rank's tap record, as adversarial data."""
    if folder.is_symlink() or not folder.is_dir():
        raise ArtifactError("the run left no artifacts folder for this scenario")
    model = read_state(folder / "model.pt", sc.state_limit_bytes, dtype=torch.float64)
    problem = structure_problem(model, layout(sc), "model.pt")
    if problem is not None:
        raise ArtifactError(problem)
    records = read_rank_records(folder / "tap", sc.ranks, sc.record_limit_bytes)
    return Observation(model, [split_record(r, f"tap/rank{k}", sc) for k, r in enumerate(records)])


def order_problem(sc: Scenario, steps: Plan, obs: Observation, windows: torch.Tensor) -> tuple[str, int]:
    """The first step where a rank's batch is not the planned one ('' if none), and how many
    (rank, step) batches differ in all."""
    names = {windows[i].numpy().tobytes(): i for i in range(windows.shape[0])}
    first, wrong = "", 0
    for rank in range(sc.ranks):
        got = [[names.get(row.numpy().tobytes(), -1) for row in b] for b in obs.batches[rank]]
        want = [step[rank] for step in steps]
        for i in range(max(len(got), len(want))):
            if i < len(got) and i < len(want) and got[i] == want[i]:
                continue
            wrong += 1
            if first:
                continue
            epoch, k = divmod(i, sc.steps_per_epoch)
            seen = "nothing" if i >= len(got) else f"rows {got[i][:5]}..."
            if i < len(got) and -1 in got[i]:
                seen = "a window that is not in the table"
            wanted = f"rows {want[i][:5]}..." if i < len(want) else "nothing (the run is over)"
            first = (f"rank {rank}, epoch {epoch}, batch {k}: trained on {seen}, the specified order "
                     f"has {wanted}; {len(got)} batches trained, {len(want)} specified")  # fmt: skip
    return first, wrong


def compare(sc: Scenario, obs: Observation) -> judgekit.Verdict:
    windows, gesture, init = draw(sc)
    steps = plan(sc)
    order, wrong = order_problem(sc, steps, obs, windows)
    want = train(sc, windows, gesture, init, steps)
    names = sorted(layout(sc))
    error = rel_l2(torch.cat([obs.model[n].reshape(-1) for n in names]), torch.cat([want[n].reshape(-1) for n in names]))
    metrics = {"rel_l2_params": error, "mismatched_batches": wrong, "steps": len(steps)}
    checks = [Check(bool(order), f"data order is not the specified one: {order}"),
              Check.within("relative L2", error, sc.param_rtol,
                           "model.pt is not the model the specified data order trains")]  # fmt: skip
    return verdict(checks, metrics, f"every batch on every rank as specified, model within {error:.1e}")


KIT = judgekit.JudgeKit("EpochReshuffle", Scenario.from_request, observe, compare)
if __name__ == "__main__":
    judgekit.main(KIT)
