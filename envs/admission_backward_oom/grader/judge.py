"""Judge phase of TrainFail/AdmissionBackwardOOM-v1 (trusted: no revision code runs here).

    python /grader/judge.py --scenarios /io/scenarios.json --artifacts /artifacts \
        --run /io/run.json --out-dir /io/outcomes [--oracle /oracle]

For each scenario it regenerates the calls itself (``kit/fixtures.py``), prices them with its
own oracle (``oracle.py``: chunk enumeration over the global row union), measures the peak
memory of every call and piece the revision admitted by replaying it on a trusted copy of the
shipped rank (``trusted/packrl``: the same model, head, meter), reads the revision's plans
from ``ARTIFACTS/<scenario>/results.jsonl`` as adversarial data and writes
``OUT/<scenario>.json``. Nothing the run reports about memory is believed: its measured peaks
are only shown beside the judge's own.

Leak canary (must never appear where the agent or the run phase can look):
TRAINFAIL-CANARY-8e41c7a0d25b4f96b3e1c90a7d6f5b22
"""
from __future__ import annotations

import argparse
import json
import math
import os
import stat
import sys
import time
import traceback
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE / "kit"), str(HERE / "trusted")]

import torch  # noqa: E402
from fixtures import make_calls  # noqa: E402
from oracle import SAFETY, prices  # noqa: E402
from scenario import NAME_RE, Scenario, read_requests  # noqa: E402

from packrl.calls import Call  # noqa: E402  (trusted copy)
from packrl.config import ModelConfig, RuntimeConfig, from_dict  # noqa: E402
from packrl.model import Decoder  # noqa: E402
from packrl.trainer import run_call  # noqa: E402

RESULTS_LIMIT = 4 << 20
JSON_LIMIT = 1 << 20
LOG_LIMIT = 64 << 10
DECISIONS = ("run", "split", "refuse")


class ArtifactError(Exception):
    """An artifact is missing, too large or malformed."""


def read_regular(path: Path, limit: int) -> bytes:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as err:
        raise ArtifactError(f"{path.name}: {err.strerror}") from None
    with os.fdopen(fd, "rb") as fh:
        info = os.fstat(fh.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise ArtifactError(f"{path.name}: not a regular file")
        if info.st_size > limit:
            raise ArtifactError(f"{path.name}: {info.st_size} bytes, over {limit}")
        return fh.read(limit)


def read_json_object(path: Path, limit: int = JSON_LIMIT) -> dict[str, Any]:
    try:
        raw = json.loads(read_regular(path, limit).decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise ArtifactError(f"{path.name}: not JSON ({err})") from None
    if not isinstance(raw, dict):
        raise ArtifactError(f"{path.name}: not a JSON object")
    return raw


def integer(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) else None


def one_line(text: str, limit: int = 240) -> str:
    flat = "".join(c if c.isprintable() else " " for c in text.replace("\n", " "))
    return " ".join(flat.split())[:limit]


def int_lists(value: Any) -> list[list[int]] | None:
    if not isinstance(value, list) or len(value) > 10_000:
        return None
    out = []
    for item in value:
        if not isinstance(item, list) or any(integer(i) is None for i in item):
            return None
        out.append(list(item))
    return out


def read_results(folder: Path) -> dict[str, dict[str, Any]]:
    """``results.jsonl``: one well-formed record per call name."""
    text = read_regular(folder / "results.jsonl", RESULTS_LIMIT).decode("utf-8", errors="replace")
    records: dict[str, dict[str, Any]] = {}
    for line in text.splitlines()[:10_000]:
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except json.JSONDecodeError:
            raise ArtifactError("results.jsonl: a line is not JSON") from None
        if not isinstance(rec, dict) or not isinstance(rec.get("name"), str):
            raise ArtifactError("results.jsonl: a record without a name")
        if rec["name"] in records:
            raise ArtifactError(f"results.jsonl: call {one_line(rec['name'], 60)} reported twice")
        if rec.get("decision") not in DECISIONS:
            raise ArtifactError(f"call {rec['name']}: decision {one_line(str(rec.get('decision')), 40)}")
        demand = integer(rec.get("demand_bytes"))
        if demand is None or demand < 0:
            raise ArtifactError(f"call {rec['name']}: demand_bytes is not a whole number")
        pieces = int_lists(rec.get("pieces"))
        piece_demands = rec.get("piece_demand_bytes")
        if pieces is None or not isinstance(piece_demands, list) or any(integer(d) is None for d in piece_demands):
            raise ArtifactError(f"call {rec['name']}: pieces / piece_demand_bytes malformed")
        executed = rec.get("executed")
        if not isinstance(executed, list) or not all(isinstance(e, dict) for e in executed):
            raise ArtifactError(f"call {rec['name']}: executed malformed")
        records[rec["name"]] = rec
    return records


class Replay:
    """Trusted peak-memory measurements on the shipped rank (cached per request subset)."""

    def __init__(self, model_cfg: dict[str, Any], runtime: dict[str, Any]) -> None:
        self.model = Decoder.build(from_dict(ModelConfig, model_cfg), from_dict(RuntimeConfig, runtime))
        self.cache: dict[tuple[int, ...], int] = {}

    def peak(self, call: Call, indices: list[int]) -> int:
        key = tuple(indices)
        if key not in self.cache:
            self.cache[key] = run_call(self.model, call.subset(indices)).peak_bytes
        return self.cache[key]


def read_run_facts(path: Path) -> dict[str, Any]:
    """``/io/run.json``: what the host measured of the run phase (trusted, but still checked)."""
    try:
        facts = read_json_object(path)
    except ArtifactError:
        return {}
    duration = number(facts.get("duration_s"))
    scenarios = integer(facts.get("scenarios"))
    return {"duration_s": duration if duration is not None and duration >= 0 else None,
            "scenarios": scenarios, "timed_out": facts.get("timed_out") is True}


def check_unit_time(sc: Scenario, name: str, run: dict[str, Any], metrics: dict[str, Any]) -> list[str]:
    """A planning-only call's time, by the host's clock: the scenario's whole run phase, alone in
    its launch unit. Nothing the run reports about its own time is believed (revision code can
    tell when it is graded, and can time itself however it likes)."""
    metrics["unit_s"] = run.get("duration_s")
    metrics["unit_time_limit_s"] = sc.unit_time_limit_s
    if run.get("scenarios") != 1:
        return [f"call {name}: grader fault: the scenario was not run alone, so its time cannot be measured"]
    if run.get("timed_out"):
        return [f"call {name}: the run was stopped at its time limit while planning"]
    if run.get("duration_s") is None or run["duration_s"] > sc.unit_time_limit_s:
        return [f"call {name}: planning took {run.get('duration_s')} s by the host's clock (the whole run, "
                f"start-up included), limit {sc.unit_time_limit_s:g} s"]
    return []


def check_pieces_needed(name: str, entry: dict[str, Any], pieces: list[list[int]], spec: dict[str, Any],
                        runtime: dict[str, Any], budget: int) -> list[str]:
    """Calls are not split needlessly: each piece but the last must be unable to take the next
    request, i.e. the piece with the next piece's first request prices above the budget (oracle)."""
    problems = []
    for piece, following in zip(pieces, pieces[1:]):
        merged = [*piece, following[0]]
        demand = prices([entry["requests"][i] for i in merged], spec["model"], runtime).demand
        if demand <= budget:
            problems.append(f"call {name}: pieces {piece[0]}..{piece[-1]} and {following[0]}.. split needlessly: "
                            f"requests {merged[0]}..{merged[-1]} together price {demand}, within the budget {budget}")
    return problems


def check_call(sc: Scenario, spec: dict[str, Any], entry: dict[str, Any], rec: dict[str, Any] | None,
               replay: Replay | None, metrics: dict[str, Any], run: dict[str, Any]) -> list[str]:
    """Every way this call's plan breaks the admission contract (empty if none)."""
    name = entry["name"]
    if rec is None:
        return [f"call {name}: no result"]
    budget = spec["budget_bytes"]
    runtime = entry.get("runtime", spec["runtime"])
    oracle = prices(entry["requests"], spec["model"], runtime)
    demand = rec["demand_bytes"]
    decision = rec["decision"]
    upper = SAFETY * (1 + sc.slack)
    m = metrics.setdefault("calls", {})[name] = {"demand": demand, "decision": decision,
                                                  "oracle_demand": oracle.demand, "legacy_price": oracle.legacy,
                                                  "rows": oracle.rows, "head_chunk_rows": oracle.head_chunk_rows}
    problems = []
    if (decision == "run") != (demand <= budget):
        problems.append(f"call {name}: decision {decision} with demand {demand} against budget {budget}")
    if not entry["execute"]:
        m["run_reported_plan_s"] = number(rec.get("plan_s"))  # shown, never used
        if not oracle.supported:
            if demand != oracle.legacy:
                problems.append(f"call {name} (unsupported configuration {runtime}): priced {demand}, "
                                f"the previous price is {oracle.legacy}")
        else:
            if not oracle.demand <= demand <= oracle.demand * (1 + sc.slack):
                problems.append(f"call {name} ({oracle.rows} rows, plan only): priced {demand}, oracle prices "
                                f"{oracle.demand} (allowed up to {1 + sc.slack:g}x)")
            problems += check_unit_time(sc, name, run, m)
        return problems
    assert replay is not None
    call = Call.from_dicts(entry["requests"])
    everything = list(range(len(call.requests)))
    peak = replay.peak(call, everything)
    m["measured_peak"] = peak
    m["demand_over_peak"] = demand / peak
    if not (peak <= oracle.demand <= peak * upper):
        problems.append(f"scenario guard: oracle demand {oracle.demand} vs measured peak {peak}")
    if demand < peak:
        problems.append(f"call {name}: priced {demand} bytes, below its measured peak {peak} "
                        f"({demand / peak:.3f}x)")
    elif demand > peak * upper:
        problems.append(f"call {name}: priced {demand} bytes, {demand / peak:.3f}x its measured peak {peak} "
                        f"(limit {upper:.3f}x: needless splits)")
    executed = rec["executed"]
    run_peaks = [integer(e.get("peak_bytes")) for e in executed]
    m["run_reported_peaks"] = run_peaks
    if any(e.get("ok") is not True for e in executed):
        bad = next(e for e in executed if e.get("ok") is not True)
        problems.append(f"call {name}: an admitted piece failed in the run: {one_line(str(bad.get('error', '')))}")
    if decision == "run":
        if [e.get("requests") for e in executed] != [everything]:
            problems.append(f"call {name}: admitted whole but not executed whole")
        if peak > budget:
            problems.append(f"call {name}: admitted whole, measured peak {peak} exceeds the budget {budget}")
    elif decision == "split":
        pieces = rec["pieces"]
        flat = [i for piece in pieces for i in piece]
        if flat != everything or len(pieces) < 2 or any(not p for p in pieces):
            problems.append(f"call {name}: split pieces {one_line(str(pieces), 120)} do not partition the requests in order")
            return problems
        if len(rec["piece_demand_bytes"]) != len(pieces):
            problems.append(f"call {name}: {len(pieces)} pieces but {len(rec['piece_demand_bytes'])} piece prices")
            return problems
        if [e.get("requests") for e in executed] != pieces:
            problems.append(f"call {name}: the executed pieces are not the planned ones")
        problems += check_pieces_needed(name, entry, pieces, spec, runtime, budget)
        m["piece_peaks"], m["piece_demands"] = [], rec["piece_demand_bytes"]
        for piece, piece_demand in zip(pieces, rec["piece_demand_bytes"]):
            piece_peak = replay.peak(call, piece)
            m["piece_peaks"].append(piece_peak)
            where = f"call {name} piece {piece[0]}..{piece[-1]}"
            if piece_peak > budget:
                problems.append(f"{where}: measured peak {piece_peak} exceeds the budget {budget}")
            if piece_demand > budget:
                problems.append(f"{where}: priced {piece_demand} over the budget {budget} and run anyway")
            if piece_demand < piece_peak:
                problems.append(f"{where}: priced {piece_demand}, below its measured peak {piece_peak}")
            elif piece_demand > piece_peak * upper:
                problems.append(f"{where}: priced {piece_demand}, {piece_demand / piece_peak:.3f}x its peak {piece_peak}")
    else:  # refuse
        singles = [replay.peak(call, [i]) for i in everything]
        m["single_request_peaks_max"] = max(singles)
        if not any(s * SAFETY > budget for s in singles):
            problems.append(f"call {name}: refused, but every request fits the budget alone "
                            f"(largest measured peak {max(singles)}, budget {budget})")
    return problems


def judge_scenario(sc: Scenario, artifacts: Path, run: dict[str, Any]) -> tuple[str, str, dict[str, Any]]:
    spec = make_calls(sc.params)
    folder = artifacts / sc.name
    metrics: dict[str, Any] = {}
    try:
        records = read_results(folder)
    except ArtifactError as err:
        try:
            log = read_regular(folder / "job.log", LOG_LIMIT).decode("utf-8", errors="replace")
        except ArtifactError:
            log = ""
        lines = [ln for ln in log.splitlines() if ln.strip()]
        last = next((ln for ln in reversed(lines) if "Error" in ln or "error" in ln), lines[-1] if lines else "(no output)")
        return "fail", f"no usable results ({err}); last log line: {one_line(last)}", metrics
    replay = None
    if any(c["execute"] for c in spec["calls"]):
        replay = Replay(spec["model"], spec["runtime"])
    problems: list[str] = []
    for entry in spec["calls"]:
        problems += check_call(sc, spec, entry, records.get(entry["name"]), replay, metrics, run)
    ratios = [c.get("demand_over_peak") for c in metrics.get("calls", {}).values() if "demand_over_peak" in c]
    metrics = {"worst_demand_over_peak": min(ratios) if ratios else None, **metrics}
    if problems:
        problems.sort(key=lambda p: "exceeds the budget" not in p and "ran out of memory" not in p)
        return "fail", "; ".join(problems)[:1500], metrics
    return "pass", f"{len(spec['calls'])} call(s): every admitted call fits, every price within bounds", metrics


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="judge AdmissionBackwardOOM scenarios")
    parser.add_argument("--scenarios", type=Path, required=True)
    parser.add_argument("--artifacts", type=Path, required=True)
    parser.add_argument("--run", type=Path, required=True)
    parser.add_argument("--out-dir", type=Path, required=True)
    parser.add_argument("--oracle", type=Path)
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    args.out_dir.mkdir(parents=True, exist_ok=True)
    run = read_run_facts(args.run)
    for raw in read_requests(args.scenarios):
        name = str(raw.get("name", ""))
        if not NAME_RE.match(name):
            continue
        started = time.time()
        try:
            sc = Scenario.from_request(raw)
            status, reason, metrics = judge_scenario(sc, args.artifacts, run)
        except Exception as err:  # noqa: BLE001 - a judge fault is a fail with the reason
            traceback.print_exc()
            status, reason, metrics = "fail", f"judge error: {type(err).__name__}: {err}"[:500], {}
        try:
            timing = read_json_object(args.artifacts / name / "timings.json")
        except ArtifactError:
            timing = {}
        t0, t1 = number(timing.get("started")), number(timing.get("ended"))
        timings = {"judge_s": round(time.time() - started, 3),
                   "run_s": round(t1 - t0, 3) if t0 is not None and t1 is not None and 0 <= t1 - t0 < 1e6 else None}
        outcome = {"status": status, "reason": reason, "metrics": metrics, "timings": timings}
        tmp = args.out_dir / f".{name}.json.tmp"
        tmp.write_text(json.dumps(outcome, indent=2, default=str) + "\n", encoding="utf-8")
        os.replace(tmp, args.out_dir / f"{name}.json")
        print(json.dumps({"scenario": name, "status": status, "reason": reason[:300]}), flush=True)


if __name__ == "__main__":
    main()
