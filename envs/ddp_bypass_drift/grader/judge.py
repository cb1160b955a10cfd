"""Judge phase of TrainFail/DDPBypassDrift-v0 (trusted: no revision code runs here).

    python /grader/judge.py --scenarios /io/scenarios.json --artifacts /artifacts \
        --run /io/run.json --out-dir /io/outcomes [--oracle /oracle]

For each scenario it regenerates the grader-owned initial weights and data itself
(``kit/fixtures.py``; nothing is read back from the run), reads the run's README-documented
outputs and the observer's records from ``ARTIFACTS/<scenario>/`` as adversarial data
(``observe.py``), recomputes every step's global-batch gradient in float64 (``oracle.py``),
compares (``verdict.py``) and writes
``OUT/<scenario>.json``: ``pass``/``fail`` with a reason, or ``retry`` for a bare gloo exit
abort before the outputs were complete. Every scenario gets an outcome; the exit code is 0
unless an outcome could not be written.

Leak canary (must never appear where the agent or the run phase can look):
TRAINFAIL-CANARY-da8f1bc14ff94b02b82b8098a42c7ece
"""
from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
import traceback
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE / "kit")]  # judge modules, then the kit's pure helpers

import torch  # noqa: E402
from fixtures import make_inputs  # noqa: E402
from observe import ArtifactError, Observation, number, observe, read_json_object, read_tail  # noqa: E402
from scenario import NAME_RE, Scenario, read_requests  # noqa: E402
from verdict import RunEnd, Verdict, judge, unfinished  # noqa: E402

RUN_JSON_LIMIT = 1 << 20
MAX_SECONDS = 1e6


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """The protocol's judge arguments (``--oracle`` is accepted and unused: no cached oracle)."""
    parser = argparse.ArgumentParser(description="judge DDPBypassDrift scenarios")
    parser.add_argument("--scenarios", type=Path, required=True)
    parser.add_argument("--artifacts", type=Path, required=True)
    parser.add_argument("--run", type=Path, required=True)
    parser.add_argument("--out-dir", type=Path, required=True)
    parser.add_argument("--oracle", type=Path)
    return parser.parse_args(argv)


def integer(value: Any) -> int | None:
    """A JSON integer (not a bool), or None."""
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def read_run(path: Path) -> dict[str, Any]:
    """``run.json`` from the host; a missing or odd field reads as unknown."""
    try:
        raw = read_json_object(path, RUN_JSON_LIMIT)
    except ArtifactError as err:
        print(f"run.json unusable: {err}", file=sys.stderr)
        raw = {}
    code = raw.get("exit_code")
    tail = raw.get("output_tail")
    return {"exit_code": integer(code),
            "timed_out": raw.get("timed_out") is True, "oom_killed": raw.get("oom_killed") is True,
            "output_tail": tail if isinstance(tail, str) else ""}


def launch_record(folder: Path) -> dict[str, Any]:
    """The run kit's ``timings.json`` (untrusted); empty if missing or malformed."""
    try:
        return read_json_object(folder / "timings.json")
    except ArtifactError:
        return {}


def run_end(run: dict[str, Any], record: dict[str, Any], log_text: str) -> RunEnd:
    """What is known about how the run phase and this scenario's launch ended."""
    code = record.get("returncode")
    kit_error = record.get("kit_error")
    notes = record.get("notes")
    kit_notes = "; ".join(n for n in notes if isinstance(n, str)) if isinstance(notes, list) else ""
    return RunEnd(phase_exit_code=run["exit_code"], phase_timed_out=run["timed_out"],
                  phase_oom_killed=run["oom_killed"], phase_output_tail=run["output_tail"],
                  launch_returncode=integer(code),
                  launch_timed_out=record.get("timed_out") is True,
                  kit_error=kit_error if isinstance(kit_error, str) else "", kit_notes=kit_notes,
                  log_text=log_text)


def seconds(value: float | None) -> float | None:
    """A duration fit for the outcome, or None if it is not a plausible one."""
    if value is None or not math.isfinite(value) or not 0 <= value <= MAX_SECONDS:
        return None
    return round(value, 3)


def run_timings(record: dict[str, Any], obs: Observation | None) -> dict[str, float | None]:
    """Start-up, training and teardown from the kit's record and the step records (untrusted:
    used only to split a group's device-seconds)."""
    started, ended = number(record.get("started")), number(record.get("ended"))
    out = {key: seconds(number(record.get(key))) for key in ("preload_s", "prepare_s", "collect_s")}
    out["run_s"] = seconds(ended - started) if started is not None and ended is not None else None
    if obs is not None and started is not None and ended is not None:
        first, last = obs.metrics[0], obs.metrics[-1]
        if first.wall_time is not None and first.step_time_s is not None and last.wall_time is not None:
            train_start = first.wall_time - first.step_time_s
            out["startup_s"] = seconds(train_start - started)
            out["train_s"] = seconds(last.wall_time - train_start)
            out["teardown_s"] = seconds(ended - last.wall_time)
    out["kit_total_s"] = seconds(number(record.get("total_s")))
    return out


def judge_scenario(sc: Scenario, artifacts: Path, run: dict[str, Any]) -> tuple[Verdict, dict[str, Any]]:
    """Artifacts -> observation; own inputs -> reference; compare."""
    folder = artifacts / sc.name
    record = launch_record(folder)
    try:
        obs = observe(folder, sc.steps, sc.world, sc.state_limit_bytes, sc.record_limit_bytes)
    except ArtifactError as err:
        end = run_end(run, record, read_tail(folder / "job.log"))
        return unfinished(sc, end, str(err)), run_timings(record, None)
    verdict = judge(sc, make_inputs(sc), obs)
    verdict.metrics["launch_returncode_reported"] = integer(record.get("returncode"))
    return verdict, run_timings(record, obs)


def json_safe(value: Any) -> Any:
    """Non-finite floats as strings, so the outcome stays strict JSON."""
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, dict):
        return {k: json_safe(v) for k, v in value.items()}
    return value


def write_outcome(out_dir: Path, name: str, verdict: Verdict, timings: dict[str, Any]) -> None:
    """The protocol's outcome JSON, written whole or not at all."""
    outcome = json_safe({"status": verdict.status, "reason": verdict.reason,
                         "metrics": verdict.metrics, "timings": timings})
    tmp = out_dir / f".{name}.json.tmp"
    tmp.write_text(json.dumps(outcome, indent=2, allow_nan=False) + "\n", encoding="utf-8")
    os.replace(tmp, out_dir / f"{name}.json")
    print(json.dumps({"scenario": name, "status": verdict.status, "reason": verdict.reason}), flush=True)


def judge_one(raw: dict[str, Any], artifacts: Path, run: dict[str, Any], out_dir: Path) -> None:
    """One scenario's outcome, whatever the artifacts hold."""
    started = time.time()
    name = str(raw.get("name", ""))
    if not NAME_RE.match(name):
        print(f"scenario name {name[:80]!r} is not a plain file name; no outcome", file=sys.stderr)
        return
    timings: dict[str, Any] = {}
    try:
        verdict, timings = judge_scenario(Scenario.from_request(raw), artifacts, run)
    except Exception as err:  # noqa: BLE001 - a judge fault must still produce an outcome
        traceback.print_exc()
        verdict = Verdict("fail", f"judge error: {type(err).__name__}: {str(err)[:200]}")
    timings["judge_s"] = round(time.time() - started, 3)
    timings["total_s"] = round((timings.get("kit_total_s") or 0.0) + timings["judge_s"], 3)
    write_outcome(out_dir, name, verdict, timings)


def main(argv: list[str] | None = None) -> None:
    """Judge every requested scenario."""
    args = parse_args(argv)
    torch.set_num_threads(1)  # one reduction order for the float64 gradients, run after run
    run = read_run(args.run)
    args.out_dir.mkdir(parents=True, exist_ok=True)
    for raw in read_requests(args.scenarios):
        judge_one(raw, args.artifacts, run, args.out_dir)


if __name__ == "__main__":
    main()
