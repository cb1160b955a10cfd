"""Grade scenarios of TrainFail/DDPTokenAverage-v0.

Run from the workspace root (the copy under test):

    python <case>/grader/harness.py --scenario scenario.json --out outcome.json
    python <case>/grader/harness.py --scenarios scenarios.json --out-dir OUTCOMES

The second form grades a group of scenarios (one world size) in one launch: their ranks are
forked from a warm launcher that imported torch and Transformers once, each scenario on its
own copy of the workspace, and each outcome goes to ``OUTCOMES/<scenario>.json``. A scenario
the group could not judge (the launcher died, a retry) gets no outcome; the gym then grades
it on its own.

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
import traceback
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from tokgrade import datagen  # noqa: E402
from tokgrade.grading import grade_records  # noqa: E402
from tokgrade.launch import (  # noqa: E402
    PRELOAD,
    Ended,
    RunPaths,
    WarmLauncher,
    launcher_env,
    log_tail,
    run_training,
)
from tokgrade.observations import load_records, missing_ranks  # noqa: E402
from tokgrade.scenario import Scenario, load_scenario, scenario_from_dict  # noqa: E402

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


def died_of_gloo_exit_abort(result: Ended, log_text: str) -> bool:
    """True when the job died by SIGABRT with the gloo teardown signature in its log."""
    by_signal = result.returncode in (-6, 134) or bool(ABORT_SIGNAL.search(log_text))
    return (
        not result.timed_out
        and result.returncode != 0
        and by_signal
        and GLOO_EXIT_ABORT in log_text
    )


def no_records_outcome(
    scenario: Scenario, result: Ended, paths: RunPaths, missing: list[int]
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
    scenario: Scenario,
    workspace: Path,
    scratch: Path,
    t_begin: float,
    launcher: WarmLauncher | None = None,
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
    result = run_training(scenario, paths, workspace, launcher)
    timings = {"launch_s": result.started - t_begin, "run_s": result.ended - result.started}
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
        startup_s=first_forward - result.started,
        train_s=last_record - first_forward,
        shutdown_s=result.ended - last_record,
        oracle_s=time.time() - t_oracle,
    )
    grade.metrics["job_returncode"] = result.returncode
    status, reason = (
        ("pass", "every update matches the global token mean")
        if grade.passed
        else ("fail", grade.reason)
    )
    return Outcome(status, reason[:480], grade.metrics, timings), paths.log


def write_outcome(path: Path, name: str, outcome: Outcome) -> None:
    """The protocol's outcome JSON (timings rounded)."""
    outcome.timings = {k: round(v, 3) for k, v in outcome.timings.items()}
    path.write_text(json.dumps(asdict(outcome), indent=2) + "\n", encoding="utf-8")
    print(f"{name}: {outcome.status}: {outcome.reason}")


def grade_one(scenario_file: Path, out: Path) -> None:
    """One scenario, one torchrun launch."""
    t_begin = time.time()
    scenario = load_scenario(scenario_file)
    scratch = Path(tempfile.mkdtemp(prefix=f"tokavg-{scenario.name}-"))
    try:
        outcome, log = run_scenario(scenario, Path.cwd(), scratch, t_begin)
        if log.exists():
            shutil.copyfile(log, out.with_suffix(".train.log"))
    finally:
        if not os.environ.get("TRAINFAIL_KEEP_SCRATCH"):
            shutil.rmtree(scratch, ignore_errors=True)
    outcome.timings["total_s"] = time.time() - t_begin
    write_outcome(out, scenario.name, outcome)


def grade_group(scenarios_file: Path, out_dir: Path) -> None:
    """Every scenario of the group through one warm launcher, each on a fresh workspace copy."""
    requests = json.loads(scenarios_file.read_text(encoding="utf-8"))
    scenarios = [scenario_from_dict(r) for r in requests]
    out_dir.mkdir(parents=True, exist_ok=True)
    root = Path(tempfile.mkdtemp(prefix="tokavg-group-"))
    try:
        with WarmLauncher(PRELOAD, launcher_env(scenarios[0].backend), root / "launcher.log") as launcher:
            preload_s = launcher.startup_s
            for index, scenario in enumerate(scenarios):
                t_begin = time.time()
                scratch = root / scenario.name
                shutil.copytree(Path.cwd(), scratch / "workspace", symlinks=True)
                try:
                    outcome, log = run_scenario(scenario, scratch / "workspace", scratch, t_begin, launcher)
                except Exception:  # no outcome: the gym grades this scenario on its own
                    traceback.print_exc()
                    continue
                if log.exists():
                    shutil.copyfile(log, out_dir / f"{scenario.name}.train.log")
                shutil.rmtree(scratch, ignore_errors=True)
                if outcome.status == "retry":
                    continue
                outcome.timings["group_preload_s"] = preload_s
                outcome.timings["total_s"] = time.time() - t_begin + (preload_s if index == 0 else 0.0)
                write_outcome(out_dir / f"{scenario.name}.json", scenario.name, outcome)
    finally:
        if not os.environ.get("TRAINFAIL_KEEP_SCRATCH"):
            shutil.rmtree(root, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    """Entry point of the harness protocol."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenario", type=Path)
    parser.add_argument("--out", type=Path)
    parser.add_argument("--scenarios", type=Path)
    parser.add_argument("--out-dir", type=Path)
    args = parser.parse_args(argv)
    if args.scenarios and args.out_dir:
        grade_group(args.scenarios, args.out_dir)
    elif args.scenario and args.out:
        grade_one(args.scenario, args.out)
    else:
        parser.error("give --scenario and --out, or --scenarios and --out-dir")
    return 0


if __name__ == "__main__":
    sys.exit(main())
