"""Grade one scenario of TrainFail/DDPTokenAverage-v0.

Run from the workspace root (the copy under test):

    python <case>/grader/harness.py --scenario scenario.json --out outcome.json

Draws the scenario's data, launches the pipeline the README way (torchrun -m sft.train) with
an observer injected through PYTHONPATH, recomputes each recorded update's gradient as the
mean cross-entropy over every response token of the global batch, and writes the verdict.

Timings: ``launch_s`` harness start to job launch (data drawing), ``startup_s`` job launch to
the first training forward pass on any rank, ``train_s`` from there to the last rank's record
of the final observed update, ``shutdown_s`` from there to the job's exit, ``run_s`` the job's
whole wall time, ``oracle_s`` loading the records and grading them.

Leak canary (must never appear where the agent can look): TRAINFAIL-CANARY-cc7d20b46f701c136c97da15b451c8c6
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from tokgrade import datagen  # noqa: E402
from tokgrade.grading import grade_records  # noqa: E402
from tokgrade.launch import RunPaths, RunResult, log_tail, run_training  # noqa: E402
from tokgrade.observations import load_records, missing_ranks  # noqa: E402
from tokgrade.scenario import Scenario, load_scenario  # noqa: E402

# torch 2.13's gloo can abort a rank during interpreter teardown; not a verdict.
GLOO_EXIT_ABORT = "terminate called without an active exception"
ABORT_SIGNAL = re.compile(r"Signal 6 \(SIGABRT\)|exitcode\s*:\s*-6\b")


@dataclass
class Outcome:
    """The harness protocol's result object."""

    status: str
    reason: str
    metrics: dict[str, Any] = field(default_factory=dict)
    timings: dict[str, float] = field(default_factory=dict)


def died_of_gloo_exit_abort(result: RunResult, log_text: str) -> bool:
    """True when the job died by SIGABRT with the gloo teardown signature in its log."""
    by_signal = result.returncode in (-6, 134) or bool(ABORT_SIGNAL.search(log_text))
    return (
        not result.timed_out
        and result.returncode != 0
        and by_signal
        and GLOO_EXIT_ABORT in log_text
    )


def no_records_outcome(
    scenario: Scenario, result: RunResult, paths: RunPaths, missing: list[int]
) -> Outcome:
    """Verdict when some rank never wrote its record."""
    log_text = paths.log.read_text(encoding="utf-8", errors="replace") if paths.log.exists() else ""
    if died_of_gloo_exit_abort(result, log_text):
        return Outcome("retry", f"gloo exit abort before ranks {missing} wrote their records")
    how = (
        f"timed out after {scenario.train_timeout_s:.0f}s"
        if result.timed_out
        else f"exited with code {result.returncode}"
    )
    reason = f"job {how} before {scenario.steps} updates were recorded on ranks {missing}: "
    return Outcome("fail", (reason + log_tail(paths.log))[:480])


def run_scenario(
    scenario: Scenario, workspace: Path, scratch: Path, t_begin: float
) -> tuple[Outcome, Path]:
    """Prepare data, train, grade; returns the outcome and the job log."""
    paths = RunPaths(
        data=scratch / "train.jsonl",
        output=scratch / "outputs",
        observations=scratch / "observations",
        log=scratch / "train.log",
    )
    records = datagen.generate(scenario.data)
    datagen.write_jsonl(records, paths.data)
    result = run_training(scenario, paths, workspace)
    timings = {"launch_s": result.t_start - t_begin, "run_s": result.t_end - result.t_start}
    missing = missing_ranks(paths.observations, scenario.world_size)
    if missing:
        outcome = no_records_outcome(scenario, result, paths, missing)
        outcome.timings = timings
        return outcome, paths.log
    t_oracle = time.time()
    ranks = load_records(paths.observations, scenario.world_size)
    grade = grade_records(scenario, ranks, records)
    first_forward = min(r.t_first_forward for r in ranks)
    last_record = max(r.t_done for r in ranks)
    timings.update(
        startup_s=first_forward - result.t_start,
        train_s=last_record - first_forward,
        shutdown_s=result.t_end - last_record,
        oracle_s=time.time() - t_oracle,
    )
    grade.metrics["job_returncode"] = result.returncode
    status, reason = (
        ("pass", "every update matches the global token mean")
        if grade.passed
        else ("fail", grade.reason)
    )
    return Outcome(status, reason[:480], grade.metrics, timings), paths.log


def main(argv: list[str] | None = None) -> int:
    """Entry point of the harness protocol."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenario", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    t_begin = time.time()
    scenario = load_scenario(args.scenario)
    scratch = Path(tempfile.mkdtemp(prefix=f"tokavg-{scenario.name}-"))
    try:
        outcome, log = run_scenario(scenario, Path.cwd(), scratch, t_begin)
        if log.exists():
            shutil.copyfile(log, args.out.with_suffix(".train.log"))
    finally:
        if not os.environ.get("TRAINFAIL_KEEP_SCRATCH"):
            shutil.rmtree(scratch, ignore_errors=True)
    outcome.timings = {k: round(v, 3) for k, v in outcome.timings.items()}
    args.out.write_text(json.dumps(asdict(outcome), indent=2) + "\n", encoding="utf-8")
    print(f"{scenario.name}: {outcome.status}: {outcome.reason}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
