"""Judge phase of TrainFail/FSDPSourceCoherence-v0: trusted, no revision code runs here.

    python /grader/judge.py --scenarios FILE --artifacts DIR --run RUN_JSON --out-dir OUT --oracle ROOT

For every scenario S of FILE it writes OUT/S.json from what the run phase left in DIR/S/
(adversarial data; kit/layout.py lists it), the host's facts about the run phase (RUN_JSON)
and the trusted oracle in ROOT/S/ (oracle_job.py). A scenario passes iff

1. its launch ended in time with exit status 0 (or with torch 2.13's gloo exit abort after
   the records were complete), leaving every rank's probe record and the pipeline's saved
   final weights;
2. the records agree with themselves and with the saved weights: the final parameters the
   probe reports are, tensor for tensor, the ones the pipeline saved;
3. the run's state (initial model, parameters, buffers, gradients, optimizer state, per-rank
   RNG and model digests) is bitwise equal to exactly one single-source oracle, its initial
   model is that source tensor by tensor, and where the scenario has only one revision in
   play (`expect`), it is that one.

Not judged: `retry` for the gloo exit abort before the records were complete, a failure of the
run kit itself, or a run phase that ran out of time before this scenario's launch ended;
`error` when the oracle is missing or the judge itself fails. Every scenario gets an outcome.
"""
# TRAINFAIL-CANARY-7ef2958c6a8fcc776795aab5adbc7ee3
from __future__ import annotations

import argparse
import json
import math
import os
import re
import sys
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE / "kit")]

import compare  # noqa: E402
import layout  # noqa: E402
from artifacts import ArtifactError, finite_number, load_safetensors, read_json_object, read_tail  # noqa: E402
from sources import LABELS, SOURCES  # noqa: E402

#: Longest reason written (it may quote the run's log, which is adversarial text).
REASON_LIMIT = 600
#: Upper bound for any duration taken from the run's own reports.
MAX_REPORTED_S = 24 * 3600.0


@dataclass
class Outcome:
    """One scenario's outcome, as OUT/<scenario>.json."""

    status: str
    reason: str
    metrics: dict[str, Any] = field(default_factory=dict)
    timings: dict[str, float] = field(default_factory=dict)

    def write(self, path: Path) -> None:
        data = {"status": self.status, "reason": " ".join(self.reason.split())[:REASON_LIMIT],
                "metrics": self.metrics, "timings": {k: round(v, 3) for k, v in self.timings.items()}}
        tmp = path.with_name(f".{path.name}.tmp")
        tmp.write_text(json.dumps(data, indent=2, default=str) + "\n")
        os.replace(tmp, path)


class Decided(Exception):
    """Judging of a scenario ends early with this outcome."""

    def __init__(self, status: str, reason: str) -> None:
        super().__init__(reason)
        self.outcome = Outcome(status, reason)


@dataclass(frozen=True)
class RunFacts:
    """What the host observed of the run phase (/io/run.json); `output_tail` is the run's text."""

    exit_code: int | None
    timed_out: bool
    output_tail: str

    @classmethod
    def load(cls, path: Path) -> RunFacts:
        try:
            raw = read_json_object(path, layout.JSON_LIMIT_BYTES)
        except ArtifactError:
            raw = {}
        code = raw.get("exit_code")
        tail = raw.get("output_tail")
        return cls(code if isinstance(code, int) and not isinstance(code, bool) else None,
                   raw.get("timed_out") is True, tail if isinstance(tail, str) else "")


@dataclass(frozen=True)
class Launch:
    """launch.json as the run kit wrote it (or the revision rewrote it)."""

    returncode: int | None
    timed_out: bool
    started: float | None
    kit_error: str


def _last_line(text: str) -> str:
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    return lines[-1] if lines else ""


def error_line(log: str) -> str:
    """The first exception line of a worker (not the launcher's), else the log's last line."""
    lines = [ln.strip() for ln in log.splitlines() if ln.strip()]
    errors = [ln for ln in lines if re.search(r"\b\w+(Error|Exception)\b:", ln) and "ChildFailedError" not in ln]
    return (errors or lines or [""])[0][:300]


def read_launch(folder: Path, facts: RunFacts) -> Launch:
    """How the scenario's launch ended; Decided when it gives nothing to judge."""
    try:
        raw = read_json_object(folder / layout.LAUNCH_FILE, layout.JSON_LIMIT_BYTES)
    except ArtifactError as exc:
        if facts.timed_out:
            raise Decided("retry", "the run phase ran out of time before this scenario's launch ended") from None
        raise Decided("fail", f"the run phase ended (exit {facts.exit_code}) without this scenario's launch "
                              f"record ({exc}): {_last_line(facts.output_tail)[:200]}") from None
    code, kit_error = raw.get("returncode"), raw.get("kit_error")
    if isinstance(kit_error, str) and kit_error:
        raise Decided("retry", f"the run kit failed before judging was possible: {kit_error}")
    if not (code is None or (isinstance(code, int) and not isinstance(code, bool))) \
            or not isinstance(raw.get("timed_out"), bool):
        raise Decided("fail", "launch.json is malformed")
    launch = Launch(code, raw["timed_out"], finite_number(raw.get("started")), "")
    if launch.timed_out or launch.returncode is None:
        raise Decided("fail", "the pipeline did not finish within the scenario's time")
    return launch


def exit_abort(launch: Launch, log: str) -> bool:
    """Whether the launch died of the gloo exit abort (not a verdict, FIELD-NOTES)."""
    return launch.returncode != 0 and any(m in log for m in layout.EXIT_ABORT_MARKERS)


def read_run_record(folder: Path, request: layout.Request, launch: Launch, log: str) -> compare.RunRecord:
    """The run's probe records, validated; Decided when missing or malformed."""
    try:
        record = compare.load_record(folder / layout.PROBE_DIR, request.devices, layout.RECORD_LIMIT_BYTES)
    except ArtifactError as exc:
        if exit_abort(launch, log):
            raise Decided("retry", "the pipeline hit the gloo exit abort before its state was recorded") from None
        raise Decided("fail", f"the pipeline exited rc={launch.returncode} without a usable state record after "
                              f"update {request.train.steps} ({exc}): {error_line(log)}") from None
    if launch.returncode != 0 and not exit_abort(launch, log):
        raise Decided("fail", f"the pipeline recorded its state but exited rc={launch.returncode}: {error_line(log)}")
    return record


def read_weights(folder: Path) -> compare.Tensors:
    """The pipeline's saved final weights; Decided when missing or malformed."""
    try:
        saved = load_safetensors(folder / layout.FINAL_DIR / layout.WEIGHTS_FILE, layout.WEIGHTS_LIMIT_BYTES)
        return compare.model_names(saved)
    except ArtifactError as exc:
        raise Decided("fail", f"no usable final weights under output.dir/final ({exc})") from None


def load_oracles(folder: Path, devices: int) -> dict[str, compare.RunRecord]:
    """Both sources' trusted oracle records; Decided (not judged) when any is unusable."""
    oracles: dict[str, compare.RunRecord] = {}
    for source in SOURCES:
        try:
            oracles[source] = compare.load_record(folder / source, devices, layout.ORACLE_RECORD_LIMIT_BYTES,
                                                  tensors=True)
        except ArtifactError as exc:
            raise Decided("error", f"no usable oracle {source} under {folder}: {exc}") from None
    return oracles


def _finite(x: float) -> float | str:
    """JSON-safe distance: names or shapes that do not line up are reported as such."""
    return x if math.isfinite(x) else "shape-mismatch"


def verdict(request: layout.Request, run: compare.RunRecord, weights: compare.Tensors,
            oracles: dict[str, compare.RunRecord]) -> Outcome:
    """Rule 3 of the module docstring, with the metrics behind it."""
    origins = compare.provenance(run, oracles)
    diffs = {s: compare.differing_fields(run, o) for s, o in oracles.items()}
    matched = [s for s, d in diffs.items() if not d]
    gaps = {s: compare.max_abs_param_diff(weights, o.params or {}) for s, o in oracles.items()}
    metrics: dict[str, Any] = {
        # Key figure first (qualify shows the first float): 0 exactly when a source is reproduced.
        "max_abs_param_vs_nearest_oracle": _finite(min(gaps.values())),
        "matched_oracle": ",".join(matched) or "none",
        "provenance": compare.provenance_counts(origins),
        "replicas_equal": run.replicas_equal,
        "expected_source": request.expect,
    }
    for s in oracles:
        metrics[f"max_abs_param_vs_oracle_{s}"] = _finite(gaps[s])
        metrics[f"fields_differing_{s}"] = diffs[s]
    if len(matched) != 1:
        where = "; ".join(f"vs {s} ({LABELS[s]}): {', '.join(d)}" for s, d in diffs.items())
        return Outcome("fail", f"state matches no single-source oracle ({where}); "
                       f"initial-model provenance {metrics['provenance']}", metrics)
    source = matched[0]
    if any(origin != source for origin in origins.values()):
        return Outcome("fail", f"initial model is not source {source} tensor by tensor: {metrics['provenance']}",
                       metrics)
    if request.expect not in ("any", source):
        return Outcome("fail", f"run starts from {source} ({LABELS[source]}) but the only published revision in "
                       f"play is {request.expect} ({LABELS[request.expect]})", metrics)
    return Outcome("pass", f"bitwise equal to the single-source oracle of {source} ({LABELS[source]})", metrics)


def reported_timings(folder: Path, launch: Launch | None, run: compare.RunRecord | None) -> dict[str, float]:
    """The run's own timings (untrusted: only used to split device time), clamped."""
    try:
        raw = read_json_object(folder / layout.TIMINGS_FILE, layout.JSON_LIMIT_BYTES)
    except ArtifactError:
        raw = {}
    timings = {k: raw.get(k) for k in ("shared_s", "setup_s", "launch_s", "total_s")}
    if run is not None and launch is not None and launch.started is not None:
        forward, done = run.timing.get("first_forward"), run.timing.get("last_step_done")
        if forward is not None and done is not None:
            timings.update(startup_s=forward - launch.started, train_s=done - forward)
    return {k: min(max(v, 0.0), MAX_REPORTED_S) for k, v in ((k, finite_number(v)) for k, v in timings.items())
            if v is not None}


def judge_scenario(request: layout.Request, folder: Path, facts: RunFacts, oracle_dir: Path | None) -> Outcome:
    """Rules 1-3 for one scenario."""
    launch: Launch | None = None
    run: compare.RunRecord | None = None
    try:
        if oracle_dir is None:
            raise Decided("error", "the judge was given no oracle (--oracle)")
        oracles = load_oracles(oracle_dir, request.devices)
        launch = read_launch(folder, facts)
        log = read_tail(folder / layout.LOG_FILE, layout.LOG_LIMIT_BYTES)
        run = read_run_record(folder, request, launch, log)
        weights = read_weights(folder)
        if problems := compare.inconsistencies(run, weights):
            raise Decided("fail", "the probe's records disagree with the pipeline's saved weights: "
                                  + "; ".join(problems))
        outcome = verdict(request, run, weights, oracles)
    except Decided as decided:
        outcome = decided.outcome
    outcome.timings = reported_timings(folder, launch, run)
    outcome.metrics["scenario"] = request.name
    return outcome


def judge_all(requests: list[layout.Request], artifacts: Path, facts: RunFacts, out_dir: Path,
              oracle_root: Path | None) -> None:
    """An outcome for every scenario, whatever happens to any one of them."""
    out_dir.mkdir(parents=True, exist_ok=True)
    for request in requests:
        started = time.time()
        try:
            oracle_dir = oracle_root / request.name if oracle_root is not None else None
            outcome = judge_scenario(request, artifacts / request.name, facts, oracle_dir)
        except Exception as exc:  # noqa: BLE001 - the judge's own failure: not a verdict
            traceback.print_exc()
            outcome = Outcome("error", f"judge error: {type(exc).__name__}: {exc}", {"scenario": request.name})
        outcome.timings["judge_s"] = time.time() - started
        outcome.timings["total_s"] = outcome.timings.get("total_s", 0.0) + outcome.timings["judge_s"]
        outcome.write(out_dir / f"{request.name}.json")
        print(f"{request.name}: {outcome.status} - {outcome.reason[:200]}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scenarios", type=Path, required=True)
    parser.add_argument("--artifacts", type=Path, required=True)
    parser.add_argument("--run", type=Path, required=True, help="the host's facts about the run phase")
    parser.add_argument("--out-dir", type=Path, required=True)
    parser.add_argument("--oracle", type=Path, help="cached oracles, one folder per scenario")
    args = parser.parse_args()
    requests = layout.load_requests(args.scenarios)
    judge_all(requests, args.artifacts, RunFacts.load(args.run), args.out_dir, args.oracle)


if __name__ == "__main__":
    main()
