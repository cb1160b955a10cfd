"""From one scenario's records to a verdict (pure: no files, no revision code).

What the README requires of dropout, checked on the masks every rank recorded:

* each module runs once per training step, with the README's name and shape ([s/tp, b, h]
  inside the sequence-parallel region, [s, b, h] without sequence parallelism), and drops
  close to its probability ``p`` of positions;
* with sequence parallelism, each rank's chunk of the sequence has its own mask: two ranks'
  masks of one module at one step may not agree more than independent ones would
  (``max_agreement``); without sequence parallelism the activations are replicated, so every
  rank must draw the same mask, bitwise;
* a module's mask changes from step to step, and two modules of one step differ;

where the config asks for bf16 (``model.bf16``), every module of every block ran inside an
entered bf16 autocast of the rank's device type, seen through the library's autocast class by
the kit's probe (which keeps CPU numerics fp32); the README leaves the rest of the model free;

and on the weights: replicated parameters are identical on every rank, and every step's update
is the README's step with the recorded masks (the judge's float64 step, ``reference.py``), the
last one landing on the parameters the pipeline saved. So masks rewritten after the fact fail
the update check, and training that drew shared masks fails the agreement check.
"""
from __future__ import annotations

from itertools import combinations
from typing import Any

import torch

from observe import RankRecord
from reference import parameter_shapes, sgd_step, shard_shape, split_dim
from scenario import Scenario


class Failed(Exception):
    """A requirement that does not hold; the message is the verdict's reason."""


def agreement(a: torch.Tensor, b: torch.Tensor) -> float:
    """Share of positions where two masks of one shape agree."""
    return float((a == b).double().mean())


def check_masks(sc: Scenario, ranks: list[RankRecord], metrics: dict[str, Any]) -> None:
    """Names, shapes, rates, cross-rank relation and freshness of every recorded mask."""
    expected = sc.dropout_modules
    chunk = sc.seq_length // sc.tp if sc.sequence_parallel else sc.seq_length
    shape = (chunk, sc.batch_size, sc.hidden_size)
    worst_rate = worst_cross = worst_fresh = 0.0
    min_cross = 1.0
    for rec in ranks:
        for index, step in enumerate(rec.steps):
            names = [name for name, _ in step.masks]
            if names != [name for name, _ in expected]:
                raise Failed(f"rank {rec.rank} step {index}: dropout modules ran as {names[:8]}, "
                             f"the README's model runs {[n for n, _ in expected]}")
            for (name, mask), (_, prob) in zip(step.masks, expected, strict=True):
                if tuple(mask.shape) != shape:
                    raise Failed(f"rank {rec.rank} step {index}: {name} mask has shape {tuple(mask.shape)}, "
                                 f"expected {shape}")
                rate = 1.0 - float(mask.double().mean())
                worst_rate = max(worst_rate, abs(rate - prob))
                if abs(rate - prob) > sc.rate_tolerance:
                    raise Failed(f"rank {rec.rank} step {index}: {name} dropped {rate:.3f} of positions, p = {prob}")
            for (name_a, a), (name_b, b) in combinations(step.masks, 2):
                worst_fresh = max(worst_fresh, agreement(a, b))
                if agreement(a, b) > sc.max_agreement:
                    raise Failed(f"rank {rec.rank} step {index}: {name_a} and {name_b} drew the same mask "
                                 f"({agreement(a, b):.3f} of positions agree)")
            if index:
                for (name, a), (_, b) in zip(rec.steps[index - 1].masks, step.masks, strict=True):
                    worst_fresh = max(worst_fresh, agreement(a, b))
                    if agreement(a, b) > sc.max_agreement:
                        raise Failed(f"rank {rec.rank}: {name} drew the same mask at steps {index - 1} and {index} "
                                     f"({agreement(a, b):.3f} of positions agree)")
    for index in range(sc.steps):
        for m, (name, prob) in enumerate(expected):
            independent = 1 - 2 * prob * (1 - prob)
            for ra, rb in combinations(ranks, 2):
                value = agreement(ra.steps[index].masks[m][1], rb.steps[index].masks[m][1])
                worst_cross, min_cross = max(worst_cross, value), min(min_cross, value)
                if sc.sequence_parallel and value > sc.max_agreement:
                    raise Failed(f"step {index}: {name} masks of tensor-parallel ranks {ra.rank} and {rb.rank} "
                                 f"agree on {value:.3f} of positions; each rank's sequence chunk needs its own "
                                 f"mask (independent masks agree on about {independent:.2f})")
                if not sc.sequence_parallel and value != 1.0:
                    raise Failed(f"step {index}: {name} masks of tensor-parallel ranks {ra.rank} and {rb.rank} "
                                 f"differ ({value:.3f} agree) on replicated activations")
    metrics.update({"max_cross_rank_agreement": worst_cross, "min_cross_rank_agreement": min_cross,
                    "max_rate_deviation": worst_rate, "max_same_rank_agreement": worst_fresh})


def full_params(sc: Scenario, shards: list[dict[str, torch.Tensor]], where: str) -> dict[str, torch.Tensor]:
    """Consolidated parameters from every rank's shards; replicas must be identical."""
    out = {}
    for name, full in parameter_shapes(sc).items():
        dim = split_dim(name)
        want = shard_shape(full, dim, sc.tp)
        parts = []
        for rank, shard in enumerate(shards):
            tensor = shard.get(name)
            if tensor is None or tuple(tensor.shape) != want:
                got = None if tensor is None else tuple(tensor.shape)
                raise Failed(f"{where}: rank {rank} {name} has shape {got}, the README layout gives {want}")
            parts.append(tensor)
        if dim is None:
            for rank, part in enumerate(parts[1:], start=1):
                if not torch.equal(part, parts[0]):
                    diff = float((part - parts[0]).abs().max())
                    raise Failed(f"{where}: replicated {name} differs between ranks 0 and {rank} (max {diff:.2e})")
            out[name] = parts[0]
        else:
            out[name] = torch.cat(parts, dim=dim)
    extra = set().union(*shards) - set(out)
    if extra:
        raise Failed(f"{where}: parameters outside the README's model: {sorted(extra)[:5]}")
    return out


def full_masks(sc: Scenario, ranks: list[RankRecord], index: int) -> dict[str, torch.Tensor]:
    """The full-sequence mask of every module at one step (rank chunks in rank order)."""
    out = {}
    for m, (name, _) in enumerate(sc.dropout_modules):
        chunks = [rec.steps[index].masks[m][1] for rec in ranks]
        out[name] = torch.cat(chunks, dim=0) if sc.sequence_parallel else chunks[0]
    return out


def check_updates(sc: Scenario, ranks: list[RankRecord], metrics: dict[str, Any]) -> None:
    """Every step's update, recomputed from the recorded weights and masks."""
    worst = 0.0
    losses = []
    for index in range(sc.steps):
        start = full_params(sc, [rec.steps[index].params for rec in ranks], f"step {index}")
        expected, loss = sgd_step(sc, start, full_masks(sc, ranks, index), index)
        losses.append(loss)
        if index + 1 < sc.steps:
            where, shards = f"step {index + 1}", [rec.steps[index + 1].params for rec in ranks]
        else:
            where, shards = "saved final parameters", [rec.final for rec in ranks]
        landed = full_params(sc, shards, where)
        for name, value in expected.items():
            diff = float((landed[name] - value).abs().max())
            worst = max(worst, diff)
            if diff > sc.update_atol:
                raise Failed(f"{where}: {name} is {diff:.2e} from the README's step {index} with the masks "
                             f"this run recorded (tolerance {sc.update_atol:.0e})")
    metrics.update({"max_update_deviation": worst, "first_loss": losses[0], "last_loss": losses[-1]})


def block_modules(sc: Scenario) -> list[str]:
    """The modules inside the README's blocks, which ``model.bf16`` runs under autocast."""
    return [f"stack.layers.{i}.{leaf}" for i in range(sc.num_layers) for leaf in ("ln", "fc1", "fc2", "hidden_dropout")]


def check_precision(sc: Scenario, ranks: list[RankRecord], metrics: dict[str, Any]) -> None:
    """With ``model.bf16``: every module inside the blocks ran under the bf16 autocast."""
    if not sc.bf16:
        return
    want, required = sc.autocast_state, block_modules(sc)
    checked = 0
    for rec in ranks:
        for index, step in enumerate(rec.steps):
            where = f"rank {rec.rank} step {index}"
            if step.autocast is None:
                raise Failed(f"{where}: no autocast record, though the config asks for bf16")
            ran = {name for name, _ in step.autocast.modules}
            missing = [name for name in required if name not in ran]
            if missing:
                raise Failed(f"{where}: the autocast record lists no forward of {missing[:3]}")
            for name, state in step.autocast.modules:
                if not (name.startswith("stack.layers.") and name.count(".") > 2):
                    continue  # outside the blocks (or a block's own call): the README leaves it free
                if state != want:
                    raise Failed(f"{where}: {name} ran with autocast {state!r}; model.bf16 asks for the blocks "
                                 f"to run under torch.autocast({want.split(':')[0]!r}, dtype=torch.bfloat16)")
                checked += 1
    metrics["block_forwards_under_bf16_autocast"] = checked


def judge(sc: Scenario, ranks: list[RankRecord]) -> tuple[str, str, dict[str, Any]]:
    """The scenario's status, reason and metrics from every rank's records."""
    metrics: dict[str, Any] = {}
    try:
        check_masks(sc, ranks, metrics)
        check_updates(sc, ranks, metrics)
        check_precision(sc, ranks, metrics)
    except Failed as err:
        return "fail", str(err)[:500], metrics
    under = ", every block under bf16 autocast" if sc.bf16 else ""
    return "pass", f"{sc.steps} steps: every dropout mask and update as the README requires{under}", metrics
