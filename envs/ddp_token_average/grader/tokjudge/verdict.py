"""One scenario's outcome from its artifacts: pass, fail, or retry (a flake, not a verdict).

Missing artifacts are the revision's doing (it crashed, hung, or never saved) unless the job
log carries torch 2.13's gloo exit abort or the run kit itself reported a failure: then the
scenario is not judged (``retry``) and the host grades it again on its own. Malformed
artifacts always fail.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tokjudge.artifacts import ArtifactMalformed, ArtifactMissing, Job, one_line_tail, read_job, read_tail, read_timings
from tokjudge.grading import grade_run
from tokjudge.observations import RankRecord, load_rank_records, load_saved_model
from tokjudge.oracle import Oracle
from tokkit import datagen, layout
from tokkit.scenario import Scenario

# torch 2.13's gloo can abort a rank during interpreter teardown; not a verdict.
GLOO_EXIT_ABORT = "terminate called without an active exception"
# torchrun's and the warm launcher's report of a rank killed by SIGABRT.
ABORT_SIGNAL = re.compile(r"Signal 6 \(SIGABRT\)|exitcode\s*:\s*-6\b|exited with code -6\b")
REASON_LIMIT = 480


@dataclass(frozen=True)
class RunFacts:
    """``/io/run.json``: what the host saw of the run phase (``output_tail`` is adversarial)."""

    exit_code: int | None
    timed_out: bool
    output_tail: str


@dataclass
class Outcome:
    """The grader protocol's outcome object."""

    status: str
    reason: str
    metrics: dict[str, Any] = field(default_factory=dict)
    timings: dict[str, float] = field(default_factory=dict)


def died_of_gloo_exit_abort(job: Job | None, log_text: str) -> bool:
    """True when the job died by SIGABRT with the gloo teardown signature in its log."""
    if job is None or job.timed_out or job.returncode == 0:
        return False
    by_signal = job.returncode in (-6, 134) or bool(ABORT_SIGNAL.search(log_text))
    return by_signal and GLOO_EXIT_ABORT in log_text


def incomplete_outcome(scenario: Scenario, folder: Path, run: RunFacts, missing: str) -> Outcome:
    """Outcome when a record or the saved model is absent."""
    job = read_job(folder)
    log_text = read_tail(folder / layout.LOG_FILE)
    if died_of_gloo_exit_abort(job, log_text):
        return Outcome("retry", f"gloo exit abort before the artifacts were complete ({missing})")
    if job is None:
        when = "timed out" if run.timed_out else f"ended with code {run.exit_code}"
        return Outcome("fail", f"the run phase {when} before finishing this scenario ({missing})")
    if job.error:
        return Outcome("retry", f"the run kit failed, not the revision: {job.error}")
    how = f"timed out after {scenario.train_timeout_s:.0f}s" if job.timed_out else f"exited with code {job.returncode}"
    return Outcome("fail", f"job {how}; {missing}: {one_line_tail(log_text)}")


def run_timings(folder: Path, ranks: list[RankRecord] | None) -> dict[str, float]:
    """The run's own (untrusted) timings, split at the first forward and the last record."""
    raw = read_timings(folder)
    timings: dict[str, float] = {k: raw[k] for k in ("preload_s", "prepare_s", "run_s") if k in raw}
    started, ended = raw.get("started"), raw.get("ended")
    forwards = [r.t_first_forward for r in ranks or [] if r.t_first_forward is not None]
    dones = [r.t_done for r in ranks or [] if r.t_done is not None]
    if started is not None and ended is not None and forwards and dones:
        timings.update(
            startup_s=min(forwards) - started,
            train_s=max(dones) - min(forwards),
            shutdown_s=ended - max(dones),
        )
    return {k: v for k, v in timings.items() if 0.0 <= v < 1e6}


def judge_scenario(scenario: Scenario, folder: Path, run: RunFacts, oracle: Oracle) -> Outcome:
    """Validate the artifacts, regenerate the data, grade."""
    try:
        ranks = load_rank_records(folder, scenario, oracle.architecture)
        saved = load_saved_model(folder, oracle.architecture)
    except ArtifactMissing as exc:
        return incomplete_outcome(scenario, folder, run, str(exc))
    except ArtifactMalformed as exc:
        return Outcome("fail", f"malformed artifacts: {exc}")
    data = datagen.generate(scenario.data)
    grade = grade_run(scenario, ranks, saved, data, oracle)
    job = read_job(folder)
    grade.metrics["job_returncode"] = job.returncode if job else None
    status, reason = ("pass", "every update matches the global token mean") if grade.passed else ("fail", grade.reason)
    return Outcome(status, reason, grade.metrics, run_timings(folder, ranks))


def judge_safely(scenario: Scenario, folder: Path, run: RunFacts, oracle: Oracle) -> Outcome:
    """``judge_scenario`` with any exception turned into a failure, and the judge's timings."""
    began = time.time()
    try:
        outcome = judge_scenario(scenario, folder, run, oracle)
    except Exception as exc:  # noqa: BLE001 - adversarial artifacts may break any assumption
        outcome = Outcome("fail", f"artifacts unusable: {type(exc).__name__}: {exc}")
    outcome.reason = outcome.reason[:REASON_LIMIT]
    if not outcome.timings:
        outcome.timings = run_timings(folder, None)
    outcome.timings["judge_s"] = time.time() - began
    outcome.timings["total_s"] = sum(
        outcome.timings.get(k, 0.0) for k in ("preload_s", "prepare_s", "run_s", "judge_s")
    )
    return outcome
