"""Grade scenarios of TrainFail/TPClipGradNorm-v0.

    python harness.py --scenario scenario.json --out outcome.json [--workspace DIR]
    python harness.py --scenarios scenarios.json --out-dir OUTCOMES [--workspace DIR]

The second form grades a group of scenarios in one launch: a warm launcher imports torch,
DeepSpeed and megatron-core once and forks each scenario's ranks from there (see
``warm_launch.py``), each scenario on its own copy of the workspace and its own scratch
folder, and writes ``OUTCOMES/<scenario>.json``. A scenario the group could not judge
(the launcher died, a gloo exit abort) gets no outcome there; the gym grades it on its own.

Runs the workspace's training pipeline (README: ``torchrun ... -m surrogate.train``) on
grader-owned initial weights and data, reads the documented outputs (``metrics.jsonl``,
per-rank DeepSpeed model states), and compares them with a TP=1 reference trained with
``torch.nn.utils.clip_grad_norm_``. Always writes an outcome; exits 0 unless the
outcome itself could not be written.

Leak canary (must never appear where the agent can look): TRAINFAIL-CANARY-3c6bc3b18fa90539fd517354ed3b50ba
"""
from __future__ import annotations

import argparse
import json
import math
import shutil
import sys
import tempfile
import time
import traceback
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from fixtures import write_fixtures  # noqa: E402
from observe import IncompleteRun, Observation, observe  # noqa: E402
from oracle import reference_run  # noqa: E402
from pipeline import PRELOAD, RunResult, launch_env, overrides, run_pipeline  # noqa: E402
from scenario import Scenario  # noqa: E402
from verdict import Verdict, judge  # noqa: E402
from warm_launch import WarmLauncher  # noqa: E402


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """``--scenario``/``--out`` or ``--scenarios``/``--out-dir`` (protocol), ``--workspace``
    (default: the cwd)."""
    parser = argparse.ArgumentParser(description="grade TPClipGradNorm scenarios")
    parser.add_argument("--scenario", type=Path)
    parser.add_argument("--out", type=Path)
    parser.add_argument("--scenarios", type=Path)
    parser.add_argument("--out-dir", type=Path)
    parser.add_argument("--workspace", type=Path, default=Path.cwd())
    args = parser.parse_args(argv)
    if not ((args.scenario and args.out) or (args.scenarios and args.out_dir)):
        parser.error("give --scenario and --out, or --scenarios and --out-dir")
    return args


def run_timings(run: RunResult, obs: Observation | None) -> dict[str, float | None]:
    """Start-up (launch to first step start), training, and teardown from the step records."""
    if obs is None:
        return {"startup_s": None, "train_s": None, "teardown_s": None,
                "run_s": round(run.ended - run.started, 3)}
    first, last = obs.metrics[0], obs.metrics[-1]
    train_start = first["wall_time"] - first["step_time_s"]
    return {"startup_s": round(train_start - run.started, 3),
            "train_s": round(last["wall_time"] - train_start, 3),
            "teardown_s": round(run.ended - last["wall_time"], 3),
            "run_s": round(run.ended - run.started, 3)}


def unfinished_verdict(sc: Scenario, run: RunResult, why: str) -> Verdict:
    """A run without complete outputs: timeout and crashes fail; a bare exit abort retries."""
    if run.timed_out:
        return Verdict("fail", f"pipeline did not finish within {sc.run_timeout_s:g}s ({why})")
    if run.exit_abort_only():
        return Verdict("retry", f"gloo exit abort before outputs were complete ({why})")
    return Verdict("fail", f"pipeline exited with code {run.returncode} without complete outputs "
                           f"({why}); last error: {run.last_error_line()}")


def json_safe(value: Any) -> Any:
    """Non-finite floats as strings, so the outcome stays strict JSON."""
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, dict):
        return {k: json_safe(v) for k, v in value.items()}
    return value


def grade(sc: Scenario, workspace: Path, scratch: Path, keep_log: Path,
          launcher: WarmLauncher | None = None) -> tuple[Verdict, dict[str, Any]]:
    """Fixtures -> run -> observe -> reference -> verdict, with timings."""
    t0 = time.time()
    fx = write_fixtures(sc, scratch)
    out_dir = scratch / "outputs"
    launch_s = time.time() - t0
    run = run_pipeline(sc, workspace, overrides(sc, fx, out_dir), scratch / "run.log", launcher)
    shutil.copyfile(run.log_path, keep_log)  # beside the outcome, for whoever reads it
    try:
        obs: Observation | None = observe(out_dir / sc.name, sc.steps, sc.tp)
    except IncompleteRun as err:
        obs, missing = None, str(err)
    timings: dict[str, Any] = {"launch_s": round(launch_s, 3), **run_timings(run, obs)}
    if obs is None:
        return unfinished_verdict(sc, run, missing), timings
    t1 = time.time()
    ref = reference_run(sc, fx)
    timings["oracle_s"] = round(time.time() - t1, 3)
    verdict = judge(sc, ref, obs)
    verdict.metrics["exit_code"] = run.returncode
    return verdict, timings


def write_outcome(path: Path, verdict: Verdict, timings: dict[str, Any]) -> None:
    """The protocol's outcome JSON."""
    outcome = json_safe({"status": verdict.status, "reason": verdict.reason,
                         "metrics": verdict.metrics, "timings": timings})
    path.write_text(json.dumps(outcome, indent=2, default=str) + "\n", encoding="utf-8")
    print(json.dumps({"scenario": path.stem, "status": verdict.status, "reason": verdict.reason}))


def grade_one(args: argparse.Namespace) -> None:
    """One scenario, one torchrun launch."""
    started = time.time()
    try:
        sc = Scenario.from_json(args.scenario)
        with tempfile.TemporaryDirectory(prefix=f"tpclip-{sc.name}-") as tmp:
            keep_log = args.out.with_name(args.out.stem + ".run.log")
            verdict, timings = grade(sc, args.workspace.resolve(), Path(tmp), keep_log)
    except Exception as err:  # a grader fault must still produce an outcome
        traceback.print_exc()
        verdict, timings = Verdict("fail", f"harness error: {type(err).__name__}: {err}"), {}
    timings["total_s"] = round(time.time() - started, 3)
    write_outcome(args.out, verdict, timings)


def grade_group(args: argparse.Namespace) -> None:
    """Every scenario of the group through one warm launcher, each on a fresh workspace copy.

    The group shares a topology, so one backend; a scenario whose grading raised, or that
    asks to be retried, is left without an outcome so that it is graded on its own.
    """
    requests = json.loads(args.scenarios.read_text(encoding="utf-8"))
    scenarios = [Scenario.from_request(r) for r in requests]
    args.out_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="tpclip-group-") as tmp:
        root = Path(tmp)
        with WarmLauncher(PRELOAD, launch_env(scenarios[0].backend), root / "launcher.log") as launcher:
            preload_s = round(launcher.startup_s, 3)
            for index, sc in enumerate(scenarios):
                started = time.time()
                scratch = root / sc.name
                workspace = scratch / "workspace"
                scratch.mkdir()
                shutil.copytree(args.workspace.resolve(), workspace, symlinks=True)
                try:
                    verdict, timings = grade(sc, workspace, scratch,
                                             args.out_dir / f"{sc.name}.run.log", launcher)
                except Exception:  # no outcome: the gym grades this scenario on its own
                    traceback.print_exc()
                    continue
                finally:
                    shutil.rmtree(scratch, ignore_errors=True)
                if verdict.status == "retry":
                    continue
                timings["group_preload_s"] = preload_s
                elapsed = time.time() - started
                timings["total_s"] = round(elapsed + (preload_s if index == 0 else 0.0), 3)
                write_outcome(args.out_dir / f"{sc.name}.json", verdict, timings)


def main(argv: list[str] | None = None) -> None:
    """Grade the scenario (or the group) and write the outcome JSON."""
    args = parse_args(argv)
    if args.scenarios:
        grade_group(args)
    else:
        grade_one(args)


if __name__ == "__main__":
    main()
