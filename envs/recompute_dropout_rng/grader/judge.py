"""Judge phase of TrainFail/RecomputeDropoutRNG-v1 (trusted: no revision code runs here).

    python /grader/judge.py --scenarios /io/scenarios.json --artifacts /artifacts \
        --run /io/run.json --out-dir /io/outcomes

Reads every rank's probe record and the saved ``model.pt`` as adversarial data, draws the
scenario's corpus again (``kit/rows.py``) and passes a scenario only if, in order: the records
have the README model's shape and dropout modules; the ranks are replicas; every forward read
corpus rows; each rank's dropout stream starts at ``train.seed + 1 + rank``; every recorded
gradient is the float64 gradient (``oracle.py``, no recomputation) of the README's loss with the
masks the stream gave each rank's forward; every forward continues its rank's stream where the
last left off; backward recomputed exactly the blocks ``remat.mode`` names; each update is SGD
on the recorded gradient and the saved model is the last one. Checks and tolerances:
grader/README.md.

Leak canary (never where the agent or the run phase can look): TRAINFAIL-CANARY-b3830a2cbcc16887e5c98bc13e354070
"""
from __future__ import annotations

import math
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(1, str(Path(__file__).resolve().parent / "kit"))

import judgekit  # noqa: E402 - the harness library
import torch  # noqa: E402
from compare import Check, max_abs_diff, rel_l2, structure_problem, verdict  # noqa: E402
from oracle import State, draw, gradient  # noqa: E402
from readers import ArtifactError, Step, read_jsonl, read_rank_records, read_state, state_dict, states  # noqa: E402
from rows import generate  # noqa: E402
from scenario import Scenario  # noqa: E402

RNG_STATE_BYTES = torch.get_rng_state().numel()
MAX_NAMES = 4096  # names one backward may list: a few dozen modules run there
BLOCK = re.compile(r"blocks\.\d+")  # a whole block, as the README names it


@dataclass
class Forward:
    rng: torch.Tensor
    ids: torch.Tensor
    dropouts: list[tuple[str, tuple[int, ...]]]
    recomputed: list[str]
    recompute_dropouts: int


@dataclass
class Rank:
    forwards: list[Forward]
    params: list[State]
    grads: list[State]
    final: State


@dataclass(frozen=True)
class Observation:
    ranks: list[Rank]
    saved: State
    metrics: list[Step]  # metrics.jsonl: timings and a figure only, never a verdict


def names(value: Any, what: str) -> list[str]:
    if not isinstance(value, list) or len(value) > MAX_NAMES or not all(isinstance(n, str) for n in value):
        raise ArtifactError(f"{what}: not a bounded list of module names")
    return [n[:200] for n in value]


def forward_record(raw: Any, sc: Scenario, what: str) -> Forward:
    if not isinstance(raw, dict):
        raise ArtifactError(f"{what}: not a forward record")
    rng, ids, drops = raw.get("rng"), raw.get("ids"), raw.get("dropouts")
    if not isinstance(rng, torch.Tensor) or rng.dtype != torch.uint8 or tuple(rng.shape) != (RNG_STATE_BYTES,):
        raise ArtifactError(f"{what}: the default generator's state is not a {RNG_STATE_BYTES}-byte CPU RNG state")
    if not isinstance(ids, torch.Tensor) or ids.dtype != torch.int64 or tuple(ids.shape) != (sc.batch_size, sc.seq_len):
        raise ArtifactError(f"{what}: the model was not called with int64 token ids [{sc.batch_size}, {sc.seq_len}]")
    ok = isinstance(drops, list) and len(drops) <= MAX_NAMES and all(
        isinstance(e, list | tuple) and len(e) == 2 and isinstance(e[0], str) and isinstance(e[1], list | tuple)
        and len(e[1]) <= 8 and all(isinstance(n, int) and not isinstance(n, bool) for n in e[1]) for e in drops)
    if not ok:
        raise ArtifactError(f"{what}: dropout calls must be [name, shape]")
    return Forward(rng.clone(), ids.clone(), [(str(n)[:200], tuple(s)) for n, s in drops],
                   names(raw.get("recomputed"), f"{what} recomputed"),
                   len(names(raw.get("recompute_dropouts"), f"{what} recompute dropouts")))


def observe(sc: Scenario, folder: Path) -> Observation:
    """Every rank's record and the saved model (``ArtifactError`` when unusable; no pickle anywhere)."""
    ranks = []
    for r, record in enumerate(read_rank_records(folder / "observe", sc.world_size, sc.record_limit_bytes)):
        forwards = record.get("forwards")
        if not isinstance(forwards, list) or len(forwards) != sc.steps:
            count = len(forwards) if isinstance(forwards, list) else "no"
            raise ArtifactError(f"rank {r}: {count} training forwards recorded over {sc.steps} optimizer steps, "
                                f"expected one per step")
        ranks.append(Rank([forward_record(f, sc, f"rank {r} forward {k}") for k, f in enumerate(forwards)],
                          states(record.get("params"), f"rank {r} params", sc.steps),
                          states(record.get("grads"), f"rank {r} grads", sc.steps),
                          state_dict(record.get("final"), f"rank {r} final")))
    saved = read_state(folder / "model.pt", sc.state_limit_bytes)
    try:
        logged = read_jsonl(folder / "metrics.jsonl", index="step", fields=("loss",), count=sc.steps)
    except ArtifactError:
        logged = []
    return Observation(ranks, saved, logged)


def flat(state: State, order: list[str]) -> torch.Tensor:
    return torch.cat([state[n].reshape(-1).to(torch.float64) for n in order])


def compare(sc: Scenario, obs: Observation) -> judgekit.Verdict:
    ranks, order = obs.ranks, list(sc.shapes)
    lead = ranks[0]
    for r, rank in enumerate(ranks):
        named = [(f"rank {r} params {k}", s) for k, s in enumerate(rank.params)]
        named += [(f"rank {r} grads {k}", s) for k, s in enumerate(rank.grads)] + [(f"rank {r} final", rank.final)]
        for what, state in named:
            if (problem := structure_problem(state, sc.shapes, what)) is not None:
                return judgekit.Verdict("fail", problem)
    if (problem := structure_problem(obs.saved, sc.shapes, "model.pt")) is not None:
        return judgekit.Verdict("fail", problem)
    want_drops = [(name, shape) for name, _, shape in sc.dropouts]
    for r, rank in enumerate(ranks):
        for k, fwd in enumerate(rank.forwards):
            if fwd.dropouts != want_drops:
                got = [f"{n}{list(s)}" for n, s in fwd.dropouts[:6]]
                return judgekit.Verdict("fail", f"rank {r} forward {k}: the dropout modules ran as {got}..., the "
                                                f"README's model runs {len(want_drops)} torch.nn.Dropout calls in order "
                                                f"({want_drops[0][0]}, then attention probabilities, attention output "
                                                f"and feed-forward output of every block)")

    # replicas: the same parameters around every update, the same averaged gradient
    spread = 0.0
    for k in range(sc.steps + 1):
        for rank in ranks[1:]:
            a, b = (rank.params[k], lead.params[k]) if k < sc.steps else (rank.final, lead.final)
            spread = max(spread, max_abs_diff(a, b)[0])
    grad_spread = max((rel_l2(flat(rank.grads[k], order), flat(lead.grads[k], order))
                       for rank in ranks[1:] for k in range(sc.steps)), default=0.0)

    # data: every forward read rows of the grader's corpus, distinct across ranks within a step
    corpus = generate(sc)
    index = {tuple(row[:-1].tolist()): row for row in corpus}
    data, rows = "", [[None] * sc.world_size for _ in range(sc.steps)]
    for k in range(sc.steps):
        seen = set()
        for r, rank in enumerate(ranks):
            keys = [tuple(x) for x in rank.forwards[k].ids.tolist()]
            missing = sum(key not in index for key in keys)
            if missing and not data:
                data = f"rank {r} step {k}: {missing} of its {len(keys)} rows are not rows of the corpus"
            if not data and seen & set(keys):
                data = f"step {k}: ranks read the same corpus row"
            seen |= set(keys)
            if not missing:
                rows[k][r] = torch.stack([index[key] for key in keys])

    # the dropout stream of each rank: seeded train.seed + 1 + rank, continued forward after forward
    start_bad = [r for r, rank in enumerate(ranks)
                 if not torch.equal(rank.forwards[0].rng, torch.Generator().manual_seed(sc.seed + 1 + r).get_state())]
    drawn = [[draw(sc, fwd.rng) for fwd in rank.forwards] for rank in ranks]
    continuity = next(((r, k) for r, rank in enumerate(ranks) for k in range(1, sc.steps)
                       if not torch.equal(rank.forwards[k].rng, drawn[r][k - 1][1])), None)

    # the gradient: float64, no recomputation, each rank's rows and the masks its stream gave
    grads, losses = [], []
    for k in range(sc.steps):
        if data:
            grads.append(math.inf)
            continue
        want, loss = gradient(sc, lead.params[k], [(rows[k][r], drawn[r][k][0]) for r in range(sc.world_size)])
        grads.append(rel_l2(flat(lead.grads[k], order), flat(want, order)))
        losses.append(loss)
    worst = max(range(sc.steps), key=lambda k: grads[k])

    # what backward recomputed
    want_re = sorted(sc.recomputed)
    rebuilt = [[sorted({n for n in fwd.recomputed if BLOCK.fullmatch(n)}) for fwd in rank.forwards] for rank in ranks]
    recompute = next(((r, k, got) for r, per in enumerate(rebuilt) for k, got in enumerate(per) if got != want_re), None)

    # the updates: SGD on the recorded gradient, and the saved model is the last one
    chain, link = 0.0, 0
    for k in range(sc.steps):
        after = lead.params[k + 1] if k + 1 < sc.steps else lead.final
        expected = {n: lead.params[k][n] - sc.lr * lead.grads[k][n] for n in order}
        miss = max_abs_diff(after, expected)[0]
        if not miss <= chain:
            chain, link = miss, k
    saved = max_abs_diff(obs.saved, lead.final)[0]

    logged = [s["loss"] for s in obs.metrics]
    loss_gap = max((abs(a - b) for a, b in zip(logged, losses, strict=False) if a is not None), default=math.nan)
    metrics = {"max_rel_l2_grad": grads[worst], "replica_param_spread": spread, "replica_grad_rel_l2": grad_spread,
               "chain_max_abs": chain, "saved_model_max_abs_diff": saved,
               "recompute_dropout_calls": sum(f.recompute_dropouts for rank in ranks for f in rank.forwards),
               "logged_loss_gap": loss_gap, **{f"rel_l2_grad_step{k}": g for k, g in enumerate(grads)}}
    where = f"remat.mode={sc.mode}" + (f", {sc.segments} segments" if sc.mode == "segments" else "")
    return verdict([
        Check(not spread <= 0.0, f"ranks hold different parameters around the updates (max |diff| {spread:.2e})"),
        Check.within("gradient spread", grad_spread, sc.replica_grad_rtol, "ranks hold different gradients"),
        Check(bool(data), data),
        Check(bool(start_bad), f"rank {start_bad[0] if start_bad else ''}: the first training forward does not start "
              f"from the dropout stream train.seed + 1 + rank = {sc.seed + 1 + (start_bad[0] if start_bad else 0)}"),
        Check.within("gradient rel L2", grads[worst], sc.grad_rtol, f"step {worst}: the gradient is not that of the "
                     f"README's loss with the dropout masks the forward drew (float64, no recomputation)"),
        Check(continuity is not None, f"rank {continuity[0] if continuity else ''} forward "
              f"{continuity[1] if continuity else ''}: the dropout stream does not continue where the previous "
              f"forward's masks left it (something between two forwards drew from it or moved it)"),
        Check(recompute is not None, f"rank {recompute[0] if recompute else ''} step {recompute[1] if recompute else ''}: "
              f"backward recomputed {recompute[2][:6] if recompute else ''}, {where} recomputes {want_re}"),
        Check.within("chain max abs", chain, sc.chain_atol, f"step {link}: the parameters after it are not SGD "
                     f"(lr {sc.lr:g}) on the recorded gradient: the training that ran did not apply it"),
        Check(not saved <= 0.0, f"model.pt is not the parameters after the last update (max |diff| {saved:.2e})"),
    ], metrics, f"{sc.steps} steps, {where}: every gradient is the no-recomputation float64 gradient with the "
                f"forward's dropout masks (worst rel L2 {grads[worst]:.2e}); streams, recomputation and updates as "
                f"the README says")


KIT = judgekit.JudgeKit("RecomputeDropoutRNG", Scenario.from_request, observe, compare)

if __name__ == "__main__":
    torch.set_num_threads(1)  # one reduction order for the float64 reference, run after run
    judgekit.main(KIT)
