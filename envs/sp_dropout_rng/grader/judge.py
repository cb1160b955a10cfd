"""Judge phase of TrainFail/SPDropoutRNG-v2 (trusted: no revision code runs here).

Reads every rank's observer record and saved parameters as adversarial data and requires, in
order: the README's dropout modules, shapes and drop rates; fresh masks at every step and in
every layer; the cross-rank relation the layout gives; on CPU ranks, masks that are the draws of
the stream the README names (the model-parallel stream seeded ``train.seed + 2718 + tp_rank``
under sequence parallelism, else the default stream as the step started); every update the
README's float64 step from the recorded weights and masks, down to the saved parameters; and,
where the config asks for bf16, the blocks under a bf16 autocast.

Leak canary (must never appear where the agent or the run phase can look):
TRAINFAIL-CANARY-9b3f1c6e2a7d48e5b0c4f8a1d6e2937c
"""
from __future__ import annotations

import sys
from dataclasses import dataclass
from itertools import combinations
from pathlib import Path
from typing import Any

sys.path.insert(1, str(Path(__file__).resolve().parent / "kit"))

import judgekit  # noqa: E402 - the harness library
import torch  # noqa: E402
from compare import max_abs_diff  # noqa: E402
from readers import ArtifactError, State, read_jsonl, read_rank_records, read_state, state_dict  # noqa: E402
from reference import draws, model_parallel_state, parameter_shapes, sgd_step, split_dim  # noqa: E402
from scenario import Scenario  # noqa: E402

#: The autocast states the kit's probe writes: a closed set; at most this many entries a step.
AUTOCAST_STATES = frozenset({"off", "cpu:bfloat16", "cpu:float16", "cuda:bfloat16", "cuda:float16"})
AUTOCAST_LIMIT = 4096
RNG_STATE_BYTES = torch.get_rng_state().numel()


@dataclass
class Step:  # one rank's training step: starting weights, default-stream state, masks, autocasts
    params: State
    rng: torch.Tensor
    masks: list[tuple[str, torch.Tensor]]
    autocast: list[tuple[str, str]] | None = None


@dataclass
class Rank:
    rank: int
    steps: list[Step]
    final: State


@dataclass
class Observation:
    ranks: list[Rank]
    metrics: list[Any]  # metrics.jsonl, for timings only


class Failed(Exception):
    """A requirement that does not hold; the message is the verdict's reason."""


def step_record(raw: Any, sc: Scenario, where: str) -> Step:
    """One step of a rank's record, in its closed shape."""
    if not isinstance(raw, dict):
        raise ArtifactError(f"{where}: not a step record")
    masks, rng = raw.get("masks"), raw.get("rng")
    if not isinstance(masks, list) or len(masks) > 10_000 or not all(
            isinstance(m, list | tuple) and len(m) == 2 and isinstance(m[0], str) and isinstance(m[1], torch.Tensor)
            and m[1].dtype == torch.bool for m in masks):
        raise ArtifactError(f"{where}: each mask must be [module name, bool tensor]")
    if not isinstance(rng, torch.Tensor) or rng.dtype != torch.uint8 or tuple(rng.shape) != (RNG_STATE_BYTES,):
        raise ArtifactError(f"{where}: the default stream's state is not a {RNG_STATE_BYTES}-byte CPU RNG state")
    autocast = None
    if sc.bf16:
        record = raw.get("autocast")
        if not isinstance(record, dict) or set(record) != {"modules"}:
            raise ArtifactError(f"{where}: the autocast record must be {{'modules': [[name, state], ...]}}")
        modules = record["modules"]
        if not isinstance(modules, list) or len(modules) > AUTOCAST_LIMIT:
            raise ArtifactError(f"{where}: autocast modules must be a list of at most {AUTOCAST_LIMIT}")
        if not all(isinstance(e, list | tuple) and len(e) == 2 and isinstance(e[0], str) and len(e[0]) <= 200
                   and e[1] in AUTOCAST_STATES for e in modules):
            raise ArtifactError(f"{where}: each autocast entry must be [module name, one of {sorted(AUTOCAST_STATES)}]")
        autocast = [(str(name), str(state)) for name, state in modules]
    return Step(state_dict(raw.get("params"), f"{where} params", torch.float64), rng,
                [(str(n)[:200], m) for n, m in masks], autocast)


def observe(sc: Scenario, folder: Path) -> Observation:
    """Every rank's record and saved parameters (``ArtifactError`` when unusable)."""
    ranks = []
    for record in read_rank_records(folder / "observe", sc.tp, sc.record_limit_bytes):
        rank, steps = record["rank"], record.get("steps")
        if not isinstance(steps, list) or len(steps) != sc.steps:
            raise ArtifactError(f"observe/rank{rank}.pt: {len(steps) if isinstance(steps, list) else 'no'} training "
                                f"steps recorded, expected {sc.steps}")
        parsed = [step_record(step, sc, f"rank {rank} step {k}") for k, step in enumerate(steps)]
        final = read_state(folder / "final" / f"tp_rank_{rank:02d}.pt", sc.state_limit_bytes, dtype=torch.float64)
        ranks.append(Rank(rank, parsed, final))
    try:
        metrics: list[Any] = read_jsonl(folder / "metrics.jsonl", index="step", fields=("loss",), count=sc.steps)
    except ArtifactError:
        metrics = []  # timings only: never part of a verdict
    return Observation(ranks, metrics)


def agreement(a: torch.Tensor, b: torch.Tensor) -> float:
    return float((a == b).double().mean())


def check_masks(sc: Scenario, ranks: list[Rank], metrics: dict[str, Any]) -> str | None:
    """Names and shapes (structural: raise), then drop rates, freshness and the cross-rank
    relation of every mask, measured over all of them; the first problem found."""
    want = [name for name, _ in sc.dropout_modules]
    problems: list[str] = []
    rate = fresh = cross = 0.0
    low = 1.0
    for rec in ranks:
        for k, step in enumerate(rec.steps):
            if [name for name, _ in step.masks] != want:
                raise Failed(f"rank {rec.rank} step {k}: dropout modules ran as {[n for n, _ in step.masks][:8]}, "
                             f"the README's model runs {want}")
            for (name, mask), (_, p) in zip(step.masks, sc.dropout_modules, strict=True):
                if tuple(mask.shape) != sc.mask_shape:
                    raise Failed(f"rank {rec.rank} step {k}: {name} mask has shape {tuple(mask.shape)}, "
                                 f"expected {sc.mask_shape}")
                dropped = 1.0 - float(mask.double().mean())
                rate = max(rate, abs(dropped - p))
                if abs(dropped - p) > sc.rate_tolerance:
                    problems.append(f"rank {rec.rank} step {k}: {name} dropped {dropped:.3f} of positions, p = {p}")
            pairs = [((a, x), (b, y), "") for (a, x), (b, y) in combinations(step.masks, 2)]
            if k:
                pairs += [((a, x), (a, y), f" at steps {k - 1} and {k}")
                          for (a, x), (_, y) in zip(rec.steps[k - 1].masks, step.masks, strict=True)]
            for (a, x), (b, y), when in pairs:
                fresh = max(fresh, agreement(x, y))
                if agreement(x, y) > sc.max_agreement:
                    both = a if when else f"{a} and {b}"
                    problems.append(f"rank {rec.rank}{'' if when else f' step {k}'}: {both} drew the same mask{when} "
                                    f"({agreement(x, y):.3f} of positions agree)")
    for k in range(sc.steps):
        for m, (name, p) in enumerate(sc.dropout_modules):
            for ra, rb in combinations(ranks, 2):
                value = agreement(ra.steps[k].masks[m][1], rb.steps[k].masks[m][1])
                cross, low = max(cross, value), min(low, value)
                pair = f"step {k}: {name} masks of tensor-parallel ranks {ra.rank} and {rb.rank}"
                if sc.sequence_parallel and value > sc.max_agreement:
                    problems.append(f"{pair} agree on {value:.3f} of positions; each rank's sequence chunk needs "
                                    f"its own mask (independent masks agree on about {1 - 2 * p * (1 - p):.2f})")
                if not sc.sequence_parallel and value != 1.0:
                    problems.append(f"{pair} differ ({value:.3f} agree) on replicated activations")
    metrics |= {"max_cross_rank_agreement": cross, "min_cross_rank_agreement": low, "max_rate_deviation": rate,
                "max_same_rank_agreement": fresh}
    return problems[0] if problems else None


def check_streams(sc: Scenario, ranks: list[Rank], metrics: dict[str, Any]) -> str | None:
    """CPU ranks: every mask is the next draw of the stream the README names for its layout
    (counted over every mask: the metric is how many positions are not)."""
    if sc.backend != "gloo":
        return None  # CUDA generators draw on the GPU: the judge checks the masks' relations only there
    problems: list[str] = []
    wrong = 0
    for rec in ranks:
        if sc.sequence_parallel:
            stream = "the model-parallel stream (seeded train.seed + 2718 + tp_rank)"
            expected = draws(model_parallel_state(sc, rec.rank), sc, sc.steps)
        else:
            stream = "the default stream as the step started"
            expected = [draws(step.rng, sc, 1)[0] for step in rec.steps]
            if not all(torch.equal(step.rng, other.steps[k].rng) for k, step in enumerate(rec.steps)
                       for other in ranks):
                problems.append(f"rank {rec.rank}: the default stream differs across ranks on replicated activations")
        for k, (step, want) in enumerate(zip(rec.steps, expected, strict=True)):
            for (name, got), mask in zip(step.masks, want, strict=True):
                differ = int((got != mask).sum())
                wrong += differ
                if differ:
                    problems.append(f"rank {rec.rank} step {k}: {name}'s mask is not the next draw of {stream}: "
                                    f"{differ} of {mask.numel()} positions differ")
    metrics["stream_mismatched_positions"] = wrong
    return problems[0] if problems else None


def full_params(sc: Scenario, shards: list[State], where: str) -> State:
    """The full model from every rank's shards; replicated parameters must be bitwise equal."""
    out = {}
    for name, full in parameter_shapes(sc).items():
        dim = split_dim(name)
        want = tuple(n // sc.tp if axis == dim else n for axis, n in enumerate(full))
        parts = []
        for rank, shard in enumerate(shards):
            part = shard.get(name)
            if part is None or tuple(part.shape) != want:
                found = None if part is None else tuple(part.shape)
                raise Failed(f"{where}: rank {rank} {name} has shape {found}, the README layout gives {want}")
            parts.append(part)
        if dim is None:
            for rank, part in enumerate(parts[1:], start=1):
                if not torch.equal(part, parts[0]):
                    raise Failed(f"{where}: replicated {name} differs between ranks 0 and {rank} "
                                 f"(max {max_abs_diff({name: part}, {name: parts[0]})[0]:.2e})")
        out[name] = parts[0] if dim is None else torch.cat(parts, dim=dim)
    extra = set().union(*shards) - set(out)
    if extra:
        raise Failed(f"{where}: parameters outside the README's model: {sorted(extra)[:5]}")
    return out


def check_updates(sc: Scenario, ranks: list[Rank], metrics: dict[str, Any]) -> str | None:
    """Every step's update, recomputed from the recorded weights and masks (NaN is infinitely far)."""
    worst, losses, problems = 0.0, [], []
    for k in range(sc.steps):
        start = full_params(sc, [rec.steps[k].params for rec in ranks], f"step {k}")
        masks = {}
        for m, (name, _) in enumerate(sc.dropout_modules):
            chunks = [rec.steps[k].masks[m][1] for rec in ranks]
            masks[name] = torch.cat(chunks, dim=0) if sc.sequence_parallel else chunks[0]
        expected, loss = sgd_step(sc, start, masks, k)
        losses.append(loss)
        last = k + 1 == sc.steps
        where = "saved final parameters" if last else f"step {k + 1}"
        landed = full_params(sc, [rec.final if last else rec.steps[k + 1].params for rec in ranks], where)
        diff, name = max_abs_diff(landed, expected)
        worst = max(worst, diff)
        if not diff <= sc.update_atol:
            problems.append(f"{where}: {name} is {diff:.2e} from the README's step {k} with the masks this run "
                            f"recorded (tolerance {sc.update_atol:.0e})")
    metrics |= {"max_update_deviation": worst, "first_loss": losses[0], "last_loss": losses[-1]}
    return problems[0] if problems else None


def check_precision(sc: Scenario, ranks: list[Rank], metrics: dict[str, Any]) -> str | None:
    """With ``model.bf16``: every module inside the blocks ran (each of them) under the bf16 autocast."""
    if not sc.bf16:
        return None
    leaves = ("ln", "fc1", "fc2", "hidden_dropout")
    required = [f"stack.layers.{i}.{leaf}" for i in range(sc.num_layers) for leaf in leaves]
    problems, under = [], 0
    for rec in ranks:
        for k, step in enumerate(rec.steps):
            where = f"rank {rec.rank} step {k}"
            if step.autocast is None:
                return f"{where}: no autocast record, though the config asks for bf16"
            missing = [name for name in required if name not in {n for n, _ in step.autocast}]
            if missing:
                problems.append(f"{where}: the autocast record lists no forward of {missing[:3]}")
            for name, state in step.autocast:
                if not (name.startswith("stack.layers.") and name.count(".") > 2):
                    continue  # outside the blocks (or a block's own call): the README leaves it free
                if state != sc.autocast_state:
                    device = sc.autocast_state.split(":")[0]
                    problems.append(f"{where}: {name} ran with autocast {state!r}; model.bf16 asks for the blocks to "
                                    f"run under torch.autocast({device!r}, dtype=torch.bfloat16)")
                under += state == sc.autocast_state
    metrics["block_forwards_under_bf16_autocast"] = under
    return problems[0] if problems else None


def judge(sc: Scenario, ranks: list[Rank]) -> judgekit.Verdict:
    """Every check measured (for the figures either side of each tolerance); the first problem is
    the reason. A structural problem (names, shapes, layout) stops the checks after it."""
    metrics: dict[str, Any] = {}
    problems = []
    try:
        for check in (check_masks, check_streams, check_updates, check_precision):
            problems.append(check(sc, ranks, metrics))
    except Failed as err:
        problems.append(str(err))
    reason = next((problem for problem in problems if problem), None)
    if reason is not None:
        return judgekit.Verdict("fail", reason[:500], metrics)
    under = ", every block under bf16 autocast" if sc.bf16 else ""
    return judgekit.Verdict("pass", f"{sc.steps} steps: every dropout mask drawn from the README's stream and every "
                                    f"update as the README requires{under}", metrics)


KIT = judgekit.JudgeKit("SPDropoutRNG", Scenario.from_request, observe, lambda sc, obs: judge(sc, obs.ranks))

if __name__ == "__main__":
    torch.set_num_threads(1)  # one reduction order for the float64 step, run after run
    judgekit.main(KIT)
