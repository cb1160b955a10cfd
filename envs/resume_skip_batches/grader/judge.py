"""Judge phase of TrainFail/ResumeSkipBatches-v1 (trusted: no revision code runs here).

    python /grader/judge.py --scenarios /io/scenarios.json --artifacts /artifacts \
        --run /io/run.json --out-dir /io/outcomes

Draws the grader's table and warm start again (``kit/fixtures.py``), replays the run that is
never stopped (``uninterrupted.py``) and passes a scenario only if

1. every launch consumed, on every rank, exactly the micro-batches the uninterrupted run
   consumes over the same global steps, in the same order (the observer's records: rows are
   identified by value against the judge's own table, exactly);
2. the model saved at every stop and at the last step is the uninterrupted run's after that
   step (relative L2 of all parameters within ``param_rtol``).

The records come from inside the revision's processes; check 2 does not use them.

Leak canary (must never appear where the agent or the run phase can look):
TRAINFAIL-CANARY-784e035def52863b36783546df279ff0
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(1, str(Path(__file__).resolve().parent / "kit"))

import judgekit  # noqa: E402 - the harness library
import torch  # noqa: E402
from artifacts import ArtifactError  # noqa: E402
from compare import Check, rel_l2, structure_problem, verdict  # noqa: E402
from fixtures import make_inputs, shapes  # noqa: E402
from readers import State, read_rank_records, read_state, tensor  # noqa: E402
from scenario import Scenario  # noqa: E402
from uninterrupted import Reference, uninterrupted  # noqa: E402

#: Rows of one recorded forward: a micro-batch, never more.
MAX_ROWS = 1 << 16


@dataclass(frozen=True)
class Observation:
    saved: dict[int, State]
    #: ``forwards[segment][rank]``: each training forward's rows, float32.
    forwards: list[list[list[torch.Tensor]]]
    metrics: list[Any] = field(default_factory=list)  # no per-step log: judgekit reports no train_s


def recorded_forwards(record: dict[str, Any], what: str, columns: int) -> list[torch.Tensor]:
    """An observer record's forwards: float32 matrices with the table's columns."""
    raw = record.get("forwards")
    if not isinstance(raw, list):
        raise ArtifactError(f"{what}: no list of forwards")
    rows = [tensor(x, f"{what} forward {i}") for i, x in enumerate(raw)]
    if any(x.dim() != 2 or x.shape[1] != columns or not 0 < x.shape[0] <= MAX_ROWS for x in rows):
        raise ArtifactError(f"{what}: a forward is not a micro-batch of {columns}-column rows")
    return rows


def observe(sc: Scenario, folder: Path) -> Observation:
    """Every stop's saved model and every launch's records, as adversarial data."""
    if folder.is_symlink() or not folder.is_dir():
        raise ArtifactError("the run left no artifacts folder for this scenario")
    saved = {}
    for _, stop in sc.segments:
        name = f"checkpoint-{stop}/model.pt"
        state = read_state(folder / name, sc.state_limit_bytes, dtype=torch.float64)
        problem = structure_problem(state, shapes(sc), name)
        if problem is not None:
            raise ArtifactError(problem)
        saved[stop] = state
    forwards = []
    for index in range(len(sc.segments)):
        records = read_rank_records(folder / "observe" / f"seg{index}", sc.ranks, sc.record_limit_bytes)
        forwards.append([recorded_forwards(r, f"seg{index}/rank{k}", sc.input_dim) for k, r in enumerate(records)])
    return Observation(saved, forwards)


def first_order_problem(sc: Scenario, ref: Reference, obs: Observation, table: torch.Tensor) -> tuple[str, int]:
    """Where a launch's consumed micro-batches first leave the uninterrupted order ('' if never),
    and how many micro-batches differ in all."""
    index = {table[i].numpy().tobytes(): i for i in range(table.shape[0])}
    first, mismatched = "", 0
    for segment, (start, _) in enumerate(sc.segments):
        for rank in range(sc.ranks):
            got = [[index.get(row.numpy().tobytes(), -1) for row in x] for x in obs.forwards[segment][rank]]
            want = ref.consumed(sc, segment, rank)
            bad = [i for i in range(max(len(got), len(want))) if i >= len(got) or i >= len(want) or got[i] != want[i]]
            mismatched += len(bad)
            if bad and not first:
                i = bad[0]
                seen = f"rows {got[i][:4]}..." if i < len(got) else "nothing"
                if i < len(got) and -1 in got[i]:
                    seen = "a row that is not in the table"
                wanted = f"{want[i][:4]}..." if i < len(want) else "nothing (the launch's windows are done)"
                resumed = f"resumed from step {start}" if start else "from the warm start"
                first = (f"launch {segment} ({resumed}), rank {rank}, micro-batch {i} (step "
                         f"{start + 1 + i // sc.accumulation}): consumed {seen}, the uninterrupted run consumes "
                         f"{wanted}; {len(got)} micro-batches consumed, {len(want)} expected")  # fmt: skip
    return first, mismatched


def compare(sc: Scenario, obs: Observation) -> judgekit.Verdict:
    """The observation against the run that is never stopped."""
    inputs = make_inputs(sc)
    ref = uninterrupted(sc, inputs, set(obs.saved))
    order, mismatched = first_order_problem(sc, ref, obs, inputs.features.float().contiguous())
    names = sorted(shapes(sc))

    def vector(state: State) -> torch.Tensor:  # one vector: a per-tensor ratio explodes on fc2.bias
        return torch.cat([state[n].reshape(-1) for n in names])

    errors = {k: rel_l2(vector(obs.saved[k]), vector(ref.states[k])) for k in obs.saved}
    worst = max(errors, key=lambda k: errors[k])
    metrics = {"max_rel_l2_params": errors[worst], "mismatched_micro_batches": mismatched,
               **{f"rel_l2_step{k}": v for k, v in errors.items()}}  # fmt: skip
    model = f"checkpoint-{worst} is not the uninterrupted run's model after step {worst}"
    checks = [Check(bool(order), f"data order differs from the uninterrupted run: {order}"),
              Check.within("relative L2", errors[worst], sc.param_rtol, model)]  # fmt: skip
    summary = f"every launch consumed the uninterrupted order, every saved model matches (rel L2 {errors[worst]:.2e})"
    return verdict(checks, metrics, summary)


KIT = judgekit.JudgeKit("ResumeSkipBatches", Scenario.from_request, observe, compare)
if __name__ == "__main__":
    judgekit.main(KIT)
