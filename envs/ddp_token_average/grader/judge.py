"""Judge phase of TrainFail/DDPTokenAverage-v1 (trusted: no revision code runs here).

    python /grader/judge.py --scenarios /io/scenarios.json --artifacts /artifacts \
        --run /io/run.json --out-dir /io/outcomes

Draws the scenario's records again (``kit/sftdata.py``) and passes a scenario only if the ranks
are replicas around every recorded update, every update consumed exactly its window's records,
every recorded gradient is the float64 oracle's global response-token mean (``oracle.py``), the
Trainer's optimizer replayed over the records lands on each next recorded state, and the saved
model is the last one: checks and tolerances in grader/README.md.

Leak canary (must never appear where the agent or the run phase can look):
TRAINFAIL-CANARY-cc7d20b46f701c136c97da15b451c8c6
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(1, str(Path(__file__).resolve().parent / "kit"))

import judgekit  # noqa: E402 - the harness library
import torch  # noqa: E402
from artifacts import ArtifactError, number  # noqa: E402
from compare import Check, max_abs_diff, rel_l2, replica_spread, structure_problem, verdict  # noqa: E402
from oracle import Chain, Oracle, State  # noqa: E402
from readers import Step, read_rank_records, read_safetensors, state_dict, states  # noqa: E402
from scenario import Scenario  # noqa: E402
from sftdata import generate, row_key  # noqa: E402

GRAD_RTOL, REPLICA_RTOL, CHAIN_RTOL = 1e-5, 1e-6, 1e-3
MAX_ROWS = 4096  # rows one update may report: it reads a few dozen records
ORACLES: dict[str, Oracle] = {}  # one per architecture, built on first use


@dataclass(frozen=True)
class Observation:
    #: per rank: ``params`` and ``grads`` (one state per update), ``rows`` (per update), ``final``
    ranks: list[dict[str, Any]]
    saved: State
    metrics: list[Step]  # rank 0's update times: only to split start-up from training


def consumed(update: Any, what: str) -> list[tuple[int, ...]]:
    """One update's rows: bounded int64 matrices of token ids, right padding stripped."""
    ok = isinstance(update, list) and all(isinstance(x, torch.Tensor) and x.dtype == torch.int64 and x.dim() == 2
                                          and x.shape[1] <= MAX_ROWS for x in update)  # fmt: skip
    if not ok or sum(len(x) for x in update) > MAX_ROWS:
        raise ArtifactError(f"{what}: not a bounded list of token-id matrices")
    return [row_key(row) for x in update for row in x.tolist()]


def rank_view(record: dict[str, Any], rank: int, sc: Scenario) -> dict[str, Any]:
    what, rows = f"rank {rank} record", record.get("rows")
    if not isinstance(rows, list) or len(rows) != sc.steps:
        raise ArtifactError(f"{what}: the rows of {sc.steps} updates expected")
    return {"params": states(record.get("params"), f"{what} params", sc.steps),
            "grads": states(record.get("grads"), f"{what} grads", sc.steps),
            "rows": [consumed(update, f"{what}, update {k + 1} rows") for k, update in enumerate(rows)],
            "final": state_dict(record.get("final"), f"{what} final")}  # fmt: skip


def observe(sc: Scenario, folder: Path) -> Observation:
    """Every rank's record and the saved model, as adversarial data (no pickle anywhere)."""
    records = read_rank_records(folder / "records", sc.world_size, sc.record_limit_bytes)
    saved = read_safetensors(folder / "model.safetensors", sc.record_limit_bytes)
    # Transformers saves GPTNeoXForCausalLM's lm_head under its checkpoint name, embed_out
    saved = {
        "lm_head." + n.removeprefix("embed_out.") if n.startswith("embed_out.") else n: v for n, v in saved.items()
    }
    times = records[0].get("times")
    marks = [number(records[0].get("first_forward")), *map(number, times if isinstance(times, list) else [])]
    marks = marks[: sc.steps + 1]
    steps = [Step(k, {}, b - a if a and b else None, b) for k, (a, b) in enumerate(zip(marks, marks[1:]))]  # noqa: B905
    return Observation([rank_view(r, k, sc) for k, r in enumerate(records)], saved, steps)


def compare(sc: Scenario, obs: Observation) -> judgekit.Verdict:
    """The records and the saved model against the oracle and the optimizer replay."""
    oracle = ORACLES[sc.architecture] = ORACLES.get(sc.architecture) or Oracle(sc)
    lead, ranks, index = obs.ranks[0], obs.ranks, {r.input_ids: r for r in generate(sc)}
    named = [(f"rank {r} {kind} {k + 1}", s) for r, v in enumerate(ranks) for kind in ("params", "grads")
             for k, s in enumerate(v[kind])]  # fmt: skip
    named += [(f"rank {r} final", v["final"]) for r, v in enumerate(ranks)]
    named.append(("model.safetensors", {n: v for n, v in obs.saved.items() if n in oracle.shapes}))  # + buffers
    for what, state in named:
        if (problem := structure_problem(state, oracle.shapes, what)) is not None:
            return judgekit.Verdict("fail", problem)
    around = [[v["params"][k] for v in ranks] for k in range(sc.steps)] + [[v["final"] for v in ranks]]
    spread = max(replica_spread(states)[0] for states in around)
    grad_spread = max((rel_l2(oracle.flat(v["grads"][k]), oracle.flat(lead["grads"][k]))
                       for v in ranks[1:] for k in range(sc.steps)), default=0.0)  # fmt: skip
    data, grads, norms, chain, replay = "", [], [], [], Chain(sc, oracle)
    for k in range(sc.steps):
        rows = [row for v in ranks for row in v["rows"][k]]
        found = [index[row] for row in rows if row in index]
        distinct = len({r.input_ids for r in found})
        if not data and (len(found) < len(rows) or len(rows) != sc.rows(k) or distinct != sc.rows(k)):
            data = (f"update {k + 1} consumed {len(rows)} rows ({len(rows) - len(found)} not scenario records, "
                    f"{distinct} distinct records), expected {sc.rows(k)}: batch x ranks x the window's "
                    f"{sc.micro_batches(k)} micro-batches")  # fmt: skip
        want, norm = oracle.gradient(lead["params"][k], found, sc.max_grad_norm) if found else (None, math.nan)
        grads.append(rel_l2(oracle.flat(lead["grads"][k]), want) if want is not None else math.inf)
        norms.append(norm)
        after = lead["params"][k + 1] if k + 1 < sc.steps else lead["final"]
        chain.append(replay.miss(lead["params"][k], lead["grads"][k], after))
    saved, _ = max_abs_diff(obs.saved, lead["final"])
    worst, link = max(range(sc.steps), key=lambda k: grads[k]), max(range(sc.steps), key=lambda k: chain[k])
    clipped = f", clipped to global norm {sc.max_grad_norm:g}" if sc.max_grad_norm > 0 else ""
    metrics = {"max_rel_l2_grad": grads[worst], "replica_param_spread": spread, "replica_grad_rel_l2": grad_spread,
               "chain_rel_max": chain[link], "saved_model_max_abs_diff": saved,
               **{f"rel_l2_grad_update{k + 1}": e for k, e in enumerate(grads)},
               **{f"grad_norm_update{k + 1}": n for k, n in enumerate(norms) if sc.max_grad_norm > 0}}  # fmt: skip
    return verdict([
        Check(not spread <= 0.0, f"ranks hold different parameters around the updates (max |diff| {spread:.2e})"),
        Check.within("gradient spread", grad_spread, REPLICA_RTOL, "ranks hold different gradients"),
        Check(bool(data), data),
        Check.within("gradient rel L2", grads[worst], GRAD_RTOL, f"update {worst + 1}: the gradient is not that of the "
                     f"mean cross-entropy over all response tokens of the global batch{clipped}"),
        Check.within("chain rel", chain[link], CHAIN_RTOL, f"update {link + 1}: the parameters after it are not one "
                     "step of the training section's AdamW and schedule from the recorded parameters and gradients: "
                     "the training that ran did not apply the recorded gradients"),
        Check(not saved <= 0.0, f"the saved model (model.safetensors) is not the parameters after the last recorded "
              f"update (max |diff| {saved:.2e}): the pipeline saved a model other than the one observed"),
    ], metrics, f"every update's gradient is the global response-token mean{clipped} (worst rel L2 "
                f"{grads[worst]:.2e}) and the saved model is its product")  # fmt: skip


KIT = judgekit.JudgeKit("DDPTokenAverage", Scenario.from_request, observe, compare)

if __name__ == "__main__":
    torch.set_num_threads(1)  # one summation order for the oracle, run after run
    judgekit.main(KIT)
