"""Verdict from the ranks' records: replica consistency, data coverage, oracle gradient."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import torch

from tokgrade import oracle
from tokgrade.datagen import Record, row_key
from tokgrade.observations import RankRecord
from tokgrade.scenario import Scenario

GRAD_TOLERANCE = 1e-5  # relative L2 against the oracle
REPLICA_TOLERANCE = 1e-6  # relative L2 of any rank's gradient against rank 0's


@dataclass
class Grade:
    """Accumulated metrics and the first failed check (empty reason: passed)."""

    metrics: dict[str, Any] = field(default_factory=dict)
    reason: str = ""

    def fail(self, reason: str) -> None:
        """Keep the first failure: it is the one a reader should act on."""
        if not self.reason:
            self.reason = reason

    @property
    def passed(self) -> bool:
        """True when no check failed."""
        return not self.reason


def _check_replicas(ranks: list[RankRecord], grade: Grade) -> None:
    first = ranks[0].updates[0].params
    init_equal = all(
        r.updates[0].params.keys() == first.keys()
        and all(torch.equal(r.updates[0].params[n], first[n]) for n in first)
        for r in ranks[1:]
    )
    final_equal = len({r.final_param_hash for r in ranks}) == 1
    grade.metrics["replicas_equal_before_update1"] = init_equal
    grade.metrics["replicas_equal_after_last_update"] = final_equal
    if not init_equal:
        grade.fail("ranks start update 1 from different parameters")
    if not final_equal:
        grade.fail("ranks hold different parameters after the recorded updates")


def _consumed_records(
    step: int, ranks: list[RankRecord], index: dict[tuple[int, ...], Record], grade: Grade
) -> list[list[Record]] | None:
    """Records each rank consumed in update ``step``, or None if a row is not scenario data."""
    per_rank: list[list[Record]] = []
    for rank in ranks:
        found = [index.get(row_key(row)) for row in rank.updates[step].rows]
        if any(record is None for record in found):
            grade.fail(
                f"update {step + 1}, rank {rank.rank}: a consumed row is not a scenario record"
            )
            return None
        per_rank.append([record for record in found if record is not None])
    return per_rank


def _check_coverage(step: int, per_rank: list[list[Record]], expected: int, grade: Grade) -> None:
    consumed = [record for records in per_rank for record in records]
    distinct = len({record.input_ids for record in consumed})
    grade.metrics[f"rows_step{step + 1}"] = len(consumed)
    grade.metrics[f"tokens_per_rank_step{step + 1}"] = [
        sum(record.target_count for record in records) for records in per_rank
    ]
    if len(consumed) != expected or distinct != expected:
        grade.fail(
            f"update {step + 1} consumed {len(consumed)} rows ({distinct} distinct), "
            f"expected {expected} = batch x ranks x accumulation"
        )


def _check_gradients(
    step: int,
    ranks: list[RankRecord],
    records: list[Record],
    model: Any,
    mapping: dict[str, str],
    grade: Grade,
) -> None:
    grads = [oracle.flat_gradient(model, r.updates[step].grads, mapping) for r in ranks]
    spread = max((oracle.relative_l2(g, grads[0]) for g in grads[1:]), default=0.0)
    oracle.load_parameters(model, ranks[0].updates[step].params, mapping)
    rel = oracle.relative_l2(grads[0], oracle.reference_gradient(model, records))
    grade.metrics[f"rel_l2_grad_step{step + 1}"] = rel
    grade.metrics["rank_grad_spread_max"] = max(
        spread, grade.metrics.get("rank_grad_spread_max", 0.0)
    )
    if spread > REPLICA_TOLERANCE:
        grade.fail(f"update {step + 1}: ranks hold different gradients (rel L2 {spread:.2e})")
    if rel > GRAD_TOLERANCE:
        grade.fail(
            f"update {step + 1}: gradient is not that of the mean cross-entropy over all "
            f"response tokens of the global batch (rel L2 {rel:.2e} > {GRAD_TOLERANCE:.0e})"
        )


def grade_records(scenario: Scenario, ranks: list[RankRecord], data: list[Record]) -> Grade:
    """Run every check over the recorded updates."""
    grade = Grade()
    short = [r.rank for r in ranks if len(r.updates) < scenario.steps]
    if short:
        grade.fail(f"ranks {short} recorded fewer than {scenario.steps} updates")
        return grade
    _check_replicas(ranks, grade)
    model = oracle.build_reference_model()
    names = [n for n, _ in model.named_parameters()]
    try:
        mapping = oracle.match_names(names, list(ranks[0].updates[0].params))
    except oracle.OracleError as exc:
        grade.fail(f"recorded model does not match the case architecture: {exc}")
        return grade
    index = {record.input_ids: record for record in data}
    for step in range(scenario.steps):
        per_rank = _consumed_records(step, ranks, index, grade)
        if per_rank is None:
            continue
        _check_coverage(step, per_rank, scenario.rows_per_update, grade)
        consumed = [record for records in per_rank for record in records]
        try:
            _check_gradients(step, ranks, consumed, model, mapping, grade)
        except (oracle.OracleError, KeyError) as exc:
            grade.fail(f"update {step + 1}: recorded parameters do not fit the architecture: {exc}")
    rels = [v for k, v in grade.metrics.items() if k.startswith("rel_l2_grad_step")]
    if rels:
        grade.metrics["max_rel_l2_grad"] = max(rels)
    return grade
