"""Judge phase of TrainFail/ResumeSkipBatches-v0 (trusted: no revision code runs here).

    python /grader/judge.py --scenarios /io/scenarios.json --artifacts /artifacts \
        --run /io/run.json --out-dir /io/outcomes [--oracle /oracle]

For each scenario it regenerates the grader-owned table and warm start (``kit/fixtures.py``;
nothing is read back from the run), replays the uninterrupted run in float64
(``reference_run.py``), and requires of the interrupted-and-resumed run:

1. every launch consumed, on every rank, exactly the micro-batches the uninterrupted run
   consumes over the same global steps, in the same order (the observer's records);
2. the model saved at every interruption point and at the last step is the uninterrupted
   run's model after that step (relative L2 over all parameters within ``param_rtol``).

It writes ``OUT/<scenario>.json``: ``pass``/``fail`` with a reason, or ``retry`` for a bare gloo
exit abort. Every scenario gets an outcome.

Leak canary (must never appear where the agent or the run phase can look):
TRAINFAIL-CANARY-784e035def52863b36783546df279ff0
"""
from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE / "kit")]  # judge modules, then the kit's pure helpers

import torch  # noqa: E402
from artifacts import ArtifactError, read_forwards, read_json_object, read_state, read_tail, row_index  # noqa: E402
from fixtures import make_inputs, param_shapes  # noqa: E402
from reference_run import Reference, expected_forwards_all, reference  # noqa: E402
from scenario import NAME_RE, Scenario, read_requests  # noqa: E402

GLOO_ABORT = "terminate called without an active exception"


@dataclass
class Verdict:
    """One scenario's outcome."""

    status: str
    reason: str
    metrics: dict[str, Any] = field(default_factory=dict)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """The protocol's judge arguments (``--oracle`` is accepted and unused: no cached oracle)."""
    parser = argparse.ArgumentParser(description="judge ResumeSkipBatches scenarios")
    for name in ("--scenarios", "--artifacts", "--run", "--out-dir"):
        parser.add_argument(name, type=Path, required=True)
    parser.add_argument("--oracle", type=Path)
    return parser.parse_args(argv)


def launches_of(record: dict[str, Any]) -> list[dict[str, Any]]:
    """The kit's per-launch records (untrusted; only used to explain a failed run)."""
    raw = record.get("launches")
    return [x for x in raw if isinstance(x, dict)] if isinstance(raw, list) else []


def unfinished(sc: Scenario, folder: Path, problem: str) -> Verdict:
    """Artifacts missing or unusable: ``retry`` for a bare gloo exit abort, else ``fail``."""
    log = read_tail(folder / "job.log")
    try:
        record = read_json_object(folder / "timings.json")
    except ArtifactError:
        record = {}
    codes = [x.get("returncode") for x in launches_of(record)]
    if GLOO_ABORT in log and "Traceback" not in log and any(c in (-6, 134) for c in codes):
        return Verdict("retry", f"gloo exit abort before the outputs were complete ({problem})")
    failed = [f"launch {i} exited {c}" for i, c in enumerate(codes) if c != 0]
    kit_error = record.get("kit_error")
    tail = log.strip().splitlines()[-3:] if log.strip() else []
    detail = "; ".join([*failed, *([str(kit_error)[:200]] if isinstance(kit_error, str) else []), *tail])
    return Verdict("fail", f"{problem}; {detail[:600]}" if detail else problem)


def order_problem(sc: Scenario, ref: Reference, folder: Path, rows: dict[bytes, int]) -> tuple[str | None, int]:
    """The first place a launch's consumed micro-batches leave the uninterrupted order."""
    mismatched = 0
    first: str | None = None
    for index, (start, stop) in enumerate(sc.segments):
        for rank in range(sc.world_size):
            path = folder / "observe" / f"seg{index}" / f"rank{rank}.bin"
            got = read_forwards(path, sc.record_limit_bytes, sc.input_dim, rows)
            want = expected_forwards_all(ref, sc, index, rank)
            bad = [i for i in range(max(len(got), len(want)))
                   if i >= len(got) or i >= len(want) or got[i] != want[i]]
            mismatched += len(bad)
            if bad and first is None:
                i = bad[0]
                step = start + 1 + i // sc.accumulation
                seen = got[i][:4] if i < len(got) else "nothing"
                wanted = want[i][:4] if i < len(want) else "nothing (the window is complete)"
                resumed = f"resumed from step {start}" if start else "from the warm start"
                first = (f"launch {index} ({resumed}), rank {rank}, micro-batch {i} (step {step}): consumed rows "
                         f"{seen}..., the uninterrupted run consumes {wanted}...; {len(got)} micro-batches "
                         f"consumed, {len(want)} expected")
    return first, mismatched


def rel_l2(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> float:
    """Relative L2 distance of the whole model (every tensor flattened into one vector): a
    per-tensor ratio would blow up on the one-element output bias."""
    diff = torch.cat([(a[k] - b[k]).reshape(-1) for k in b])
    ref = torch.cat([b[k].reshape(-1) for k in b])
    return float(diff.norm() / ref.norm().clamp_min(1e-12))


def judge_scenario(sc: Scenario, folder: Path) -> Verdict:
    """Artifacts against the uninterrupted reference."""
    inputs = make_inputs(sc)
    stops = [stop for _, stop in sc.segments]
    ref = reference(sc, inputs, set(stops))
    shapes = param_shapes(sc)
    try:
        saved = {k: read_state(folder / f"checkpoint-{k}" / "model.pt", sc.state_limit_bytes, shapes) for k in stops}
        order, mismatched = order_problem(sc, ref, folder, row_index(inputs.features))
    except ArtifactError as err:
        return unfinished(sc, folder, str(err))
    errors = {k: rel_l2(saved[k], ref.states[k]) for k in stops}
    drift = max(errors.values())
    metrics: dict[str, Any] = {"max_rel_l2_params": drift, "mismatched_micro_batches": mismatched,
                               "interrupts": list(sc.interrupts), "accumulation": sc.accumulation,
                               **{f"rel_l2_step{k}": v for k, v in errors.items()}}
    if order is not None:
        return Verdict("fail", f"data order differs from the uninterrupted run: {order}", metrics)
    worst = max(errors, key=lambda k: errors[k])
    if drift > sc.param_rtol or not math.isfinite(drift):
        return Verdict("fail", f"checkpoint-{worst} is {drift:.3e} (relative L2) from the uninterrupted run's model "
                               f"after step {worst}, over {sc.param_rtol:g}", metrics)
    return Verdict("pass", f"every launch consumed the uninterrupted order and every saved model matches it "
                           f"(max relative L2 {drift:.2e})", metrics)


def json_safe(value: Any) -> Any:
    """Non-finite floats as strings, so the outcome stays strict JSON."""
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, dict):
        return {k: json_safe(v) for k, v in value.items()}
    return value


def timings_of(folder: Path) -> dict[str, Any]:
    """The kit's timings (untrusted: only to split a group's device-seconds)."""
    try:
        record = read_json_object(folder / "timings.json")
    except ArtifactError:
        return {}
    out: dict[str, Any] = {}
    for key in ("run_s", "total_s"):
        value = record.get(key)
        if isinstance(value, (int, float)) and not isinstance(value, bool) and 0 <= value < 1e6:
            out[key] = round(float(value), 3)
    return out


def judge_one(raw: dict[str, Any], artifacts: Path, out_dir: Path) -> None:
    """One scenario's outcome, whatever the artifacts hold."""
    started = time.time()
    name = str(raw.get("name", ""))
    if not NAME_RE.match(name):
        print(f"scenario name {name[:80]!r} is not a plain file name; no outcome", file=sys.stderr)
        return
    timings = timings_of(artifacts / name)
    try:
        verdict = judge_scenario(Scenario.from_request(raw), artifacts / name)
    except Exception as err:  # noqa: BLE001 - a judge fault must still produce an outcome
        traceback.print_exc()
        verdict = Verdict("fail", f"judge error: {type(err).__name__}: {str(err)[:200]}")
    timings["judge_s"] = round(time.time() - started, 3)
    timings["total_s"] = round(timings.get("total_s", 0.0) + timings["judge_s"], 3)
    outcome = json_safe({"status": verdict.status, "reason": verdict.reason,
                         "metrics": verdict.metrics, "timings": timings})
    tmp = out_dir / f".{name}.json.tmp"
    tmp.write_text(json.dumps(outcome, indent=2, allow_nan=False) + "\n", encoding="utf-8")
    os.replace(tmp, out_dir / f"{name}.json")
    print(json.dumps({"scenario": name, "status": verdict.status, "reason": verdict.reason}), flush=True)


def main(argv: list[str] | None = None) -> None:
    """Judge every requested scenario."""
    args = parse_args(argv)
    torch.set_num_threads(1)
    args.out_dir.mkdir(parents=True, exist_ok=True)
    for raw in read_requests(args.scenarios):
        judge_one(raw, args.artifacts, args.out_dir)


if __name__ == "__main__":
    main()
