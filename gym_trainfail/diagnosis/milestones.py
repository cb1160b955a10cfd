"""Diagnosis milestones, computed after the episode from its records.

================================  ==========================================================
``pre_run_hypothesis``            the right mechanism asserted or hypothesised before any
                                  ``run_job``
``source_supported_diagnosis``    a correct statement (the mechanism asserted) after the agent
                                  read a culprit location
``runtime_supported_diagnosis``   a correct statement after a ``run_job`` whose output the
                                  case's symptom detector marks
``first_device_request``          the first ``run_job`` (when it asked for devices)
``first_valid_submission``        the submit of the first valid revision (its grade)
================================  ==========================================================

Each milestone gives raw and adjusted seconds since reset, the model turn it fell in, the step
count, the token range from completed-turn counters (through the turn before, through that
turn; never interpolated) and solver device-seconds through it. Each statement (an assistant
message, a reasoning summary, the finish summary) is judged on its own by a
:class:`~.judges.Judge` against the case's private rubric; the result names the judge and its
figures on the case's held-out statements. A statement that withdraws the mechanism, attributes it
to someone else without endorsing it, or denies it counts for no milestone (``docs/diagnosis.md``,
"Stances"). Without a rubric the statement milestones are ``None``. Nothing here affects a verdict or
a reward.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from gym_trainfail.diagnosis.engagement import engagement
from gym_trainfail.diagnosis.evidence import Evidence, Statement, collect, culprit_reads
from gym_trainfail.diagnosis.heldout import judge_heldout
from gym_trainfail.diagnosis.judges import EXCERPT_CHARS, Judge, RubricJudge, judge_statements
from gym_trainfail.diagnosis.rubric import Rubric
from gym_trainfail.diagnosis.symptoms import Job, detect
from gym_trainfail.ledger import Event, iter_kind, summarize

MILESTONES = (
    "pre_run_hypothesis",
    "source_supported_diagnosis",
    "runtime_supported_diagnosis",
    "first_device_request",
    "first_valid_submission",
)
LABELS = {
    "pre_run_hypothesis": "pre-run hypothesis",
    "source_supported_diagnosis": "source-supported diagnosis",
    "runtime_supported_diagnosis": "runtime-supported diagnosis",
    "first_device_request": "first device request",
    "first_valid_submission": "first valid submission",
}


def diagnose(
    run_dir: Path,
    events: Sequence[Event],
    rubric: Rubric | None,
    *,
    arm: str,
    first_valid_at: float | None,
    judge: Judge | None = None,
) -> dict[str, Any]:
    """The episode's milestones, TrainCheck engagement (treatment arm) and validation scope."""
    judge = judge or RubricJudge()
    evidence = collect(run_dir, events)
    milestones: dict[str, dict[str, Any] | None] = dict.fromkeys(MILESTONES)
    jobs = evidence.jobs()
    first_request = next(
        (e for e in iter_kind(events, "device") if e.get("role", "solver") == "solver"), None
    )  # fmt: skip
    if first_request is not None:
        at = float(first_request.get("queued_at") or first_request["t"])
        step = jobs[0].step if jobs else evidence.steps_before(at) + 1
        milestones["first_device_request"] = _milestone(events, evidence, at, step, "")
    if first_valid_at is not None:
        milestones["first_valid_submission"] = _milestone(
            events, evidence, first_valid_at, evidence.steps_before(first_valid_at), ""
        )  # fmt: skip
    statements: dict[str, Any] = {"count": len(evidence.statements), "correct": 0, "hypothesised": 0, "undecided": 0}
    marked: list[int] = []
    if rubric is not None:
        verdicts = judge_statements([s.text for s in evidence.statements], rubric, judge)
        correct = [s for s, v in zip(evidence.statements, verdicts, strict=True) if v.correct]
        # the pre-run hypothesis also counts the mechanism put forward to be tested ("Hypothesis: …")
        held = [s for s, v in zip(evidence.statements, verdicts, strict=True) if v.credits_hypothesis]
        excerpts = {id(s): v.passage for s, v in zip(evidence.statements, verdicts, strict=True)}
        statements.update(correct=len(correct), hypothesised=len(held) - len(correct),
                          undecided=sum(v.correct is None for v in verdicts))  # fmt: skip
        first_job = jobs[0].start if jobs else None
        read = [step.end for step, _ in culprit_reads(evidence, rubric.culprits)]
        marks = detect(rubric.symptom, jobs) if rubric.symptom is not None else []
        marked = [m.step for m in marks]
        ends = {j.step: j.end for j in jobs}
        confirmed = [ends[m.step] for m in marks]
        conditions: dict[str, Callable[[Statement], bool]] = {
            "pre_run_hypothesis": lambda s: first_job is None or s.t < first_job,
            "source_supported_diagnosis": lambda s: bool(read) and min(read) <= s.t,
            "runtime_supported_diagnosis": lambda s: bool(confirmed) and min(confirmed) <= s.t,
        }
        for name, holds in conditions.items():
            pool = held if name == "pre_run_hypothesis" else correct
            found: Statement | None = next((s for s in pool if holds(s)), None)
            if found is not None:
                milestones[name] = _milestone(
                    events, evidence, found.t, evidence.steps_before(found.t), excerpts[id(found)] or found.text
                )  # fmt: skip
    return {
        "judge": judge.identity if rubric is not None else None,
        # The judge's figures on the case's held-out statements: a table says how far to trust it.
        "judge_heldout": judge_heldout(rubric, judge) if rubric is not None else None,
        "rubric": rubric.digest if rubric is not None else None,
        "milestones": milestones,
        "statements": statements,
        "symptom_jobs": marked,
        "engagement": engagement(events, evidence) if arm == "traincheck" else None,
        "validation": validation_scope(events, jobs, rubric),
    }


def _milestone(events: Sequence[Event], evidence: Evidence, t: float, step: int, excerpt: str) -> dict[str, Any]:
    cost = summarize(events, until=t)
    low, high = evidence.token_range(t)
    text = " ".join(excerpt.split())
    return {
        "raw_s": max(0.0, t - evidence.start),
        "adjusted_s": cost.adjusted_seconds,
        "turn": evidence.turn_at(t),
        "step": step,
        "tokens_low": low,
        "tokens_high": high,
        "solver_device_seconds": cost.solver_device_seconds,
        "excerpt": text if len(text) <= EXCERPT_CHARS else text[: EXCERPT_CHARS - 1] + "…",
    }


def validation_scope(events: Sequence[Event], jobs: Sequence[Job], rubric: Rubric | None) -> dict[str, Any]:
    """What validation the agent chose: its ``run_job``s, devices × seconds, distinct commands,
    the device counts it trained on and, where the case's pipeline logs them, the updates it trained."""
    steps = None
    if rubric is not None and rubric.steps_patterns:
        per_job = [_steps(rubric, job.command + "\n" + job.output) for job in jobs]
        steps = sum(per_job) if any(per_job) else None
    return {
        "jobs": len(jobs),
        "device_seconds": summarize(events).solver_device_seconds,
        "distinct_commands": len({" ".join(job.command.split()) for job in jobs}),
        "ranks": sorted({job.devices for job in jobs if job.devices}),
        "steps": steps,
    }


def _steps(rubric: Rubric, text: str) -> int:
    found = [m.group("steps") for p in rubric.steps_patterns for m in p.finditer(text)]
    return max((int(s) for s in found if s.isdigit() and len(s) < 10), default=0)
