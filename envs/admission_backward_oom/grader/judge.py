"""Judge phase of TrainFail/AdmissionBackwardOOM-v2 (trusted: no revision code runs here).

    python /grader/judge.py --scenarios /io/scenarios.json --artifacts /artifacts \
        --run /io/run.json --out-dir /io/outcomes

Regenerates each scenario's calls (``kit/scenario.py``), prices them with its own oracle
(``oracle.py``: chunk enumeration over the global row union), looks the peak of every call and
piece the revision ran up in ``peaks.json`` (measured on the shipped rank, ``measure.py``: never
the revision's rank, and nothing the run reports about memory), and checks the plans in
``results-<k>.jsonl``, read as adversarial data. ``grader/README.md`` has the table of checks;
a planning-only call's time is the host's clock (``/io/run.json``), never the run's own report.

Leak canary (must never appear where the agent or the run phase can look):
TRAINFAIL-CANARY-8e41c7a0d25b4f96b3e1c90a7d6f5b22
"""
from __future__ import annotations

import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path[1:1] = [str(HERE / "kit")]

import judgekit  # noqa: E402 - the harness library
from artifacts import ArtifactError, integer, number, read_bounded  # noqa: E402
from judgekit import one_line  # noqa: E402
from measure import key  # noqa: E402
from oracle import SAFETY, prices  # noqa: E402
from scenario import Scenario  # noqa: E402

RESULTS_LIMIT, MAX_RECORDS = 4 << 20, 10_000
DECISIONS = ("run", "split", "refuse")
PEAKS: dict[str, int] = json.loads((HERE / "peaks.json").read_text())["peaks"]


class GraderFault(Exception):
    """The pinned peaks do not cover a piece (peaks.json is stale): not a verdict."""


@dataclass(frozen=True)
class Observation:
    records: list[dict[str, dict[str, Any]]]  # per calls file: call name -> record
    metrics: list[Any] = field(default_factory=list)  # no per-step log: timings stay unsplit


def _int_lists(value: Any) -> bool:
    return isinstance(value, list) and len(value) <= MAX_RECORDS and all(
        isinstance(v, list) and all(integer(i) is not None for i in v) for v in value)  # fmt: skip


def read_results(path: Path) -> dict[str, dict[str, Any]]:
    """One well-formed record per call name (bounded; every field the judge reads type-checked)."""
    records: dict[str, dict[str, Any]] = {}
    for line in read_bounded(path, RESULTS_LIMIT).decode("utf-8", errors="replace").splitlines()[:MAX_RECORDS]:
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except (ValueError, RecursionError):
            raise ArtifactError(f"{path.name}: a line is not JSON") from None
        name = rec.get("name") if isinstance(rec, dict) else None
        if not isinstance(name, str) or name in records:
            raise ArtifactError(f"{path.name}: a record without a name, or one reported twice")
        demand, demands = integer(rec.get("demand_bytes")), rec.get("piece_demand_bytes")
        if rec.get("decision") not in DECISIONS or demand is None or demand < 0 or not _int_lists(rec.get("pieces")) \
                or not _int_lists([demands]) or not isinstance(rec.get("executed"), list) \
                or not all(isinstance(e, dict) for e in rec["executed"]):  # fmt: skip
            raise ArtifactError(f"{path.name}: call {one_line(name, 60)}: decision, prices or pieces malformed")
        records[name] = rec
    return records


def observe(sc: Scenario, folder: Path) -> Observation:
    if folder.is_symlink():
        raise ArtifactError("the scenario's artifacts folder is a link")
    return Observation([read_results(folder / f"results-{k}.jsonl") for k in range(sc.files)])


def peak(spec: dict[str, Any], requests: list[dict[str, Any]]) -> int:
    found = PEAKS.get(key(spec["model"], spec["runtime"], requests))
    if found is None:
        raise GraderFault("peaks.json has no measurement of this piece: rerun grader/measure.py")
    return found


def check_call(sc: Scenario, spec: dict[str, Any], entry: dict[str, Any], rec: dict[str, Any] | None,
               inputs: judgekit.PhaseInputs, m: dict[str, Any]) -> list[str]:  # fmt: skip
    """Every way this call's plan breaks the admission contract (empty if none)."""
    name, requests, budget = entry["name"], entry["requests"], spec["budget_bytes"]
    if rec is None:
        return [f"call {name}: no result"]
    runtime = entry.get("runtime", spec["runtime"])
    oracle = prices(requests, spec["model"], runtime)
    demand, decision, upper = rec["demand_bytes"], rec["decision"], SAFETY * (1 + sc.slack)
    m |= {"demand": demand, "decision": decision, "oracle_demand": oracle.demand, "legacy_price": oracle.legacy,
          "rows": oracle.rows, "head_chunk_rows": oracle.head_chunk_rows}  # fmt: skip
    problems = [f"call {name}: decision {decision} with demand {demand} against budget {budget}"] \
        if (decision == "run") != (demand <= budget) else []  # fmt: skip
    if not entry["execute"]:
        m["run_reported_plan_s"] = number(rec.get("plan_s"))  # shown, never used
        if not oracle.supported and demand != oracle.legacy:
            problems.append(f"call {name} (unsupported configuration {runtime}): priced {demand}, the previous price "
                            f"is {oracle.legacy}")  # fmt: skip
        if oracle.supported and not oracle.demand <= demand <= oracle.demand * (1 + sc.slack):
            problems.append(f"call {name} ({oracle.rows} rows, plan only): priced {demand}, oracle prices "
                            f"{oracle.demand} (allowed up to {1 + sc.slack:g}x)")  # fmt: skip
        return problems + (unit_time(sc, name, inputs, m) if sc.unit_time_limit_s > 0 else [])
    whole = peak(spec, requests)
    m |= {"measured_peak": whole, "demand_over_peak": demand / whole}
    if not whole <= oracle.demand <= whole * upper:
        raise GraderFault(f"scenario guard: oracle demand {oracle.demand} vs measured peak {whole}")
    problems += priced(f"call {name}", demand, whole, upper)
    executed = rec["executed"]
    m["run_reported_peaks"] = [integer(e.get("peak_bytes")) for e in executed]
    if bad := next((e for e in executed if e.get("ok") is not True), None):
        problems.append(f"call {name}: an admitted piece failed in the run: {one_line(str(bad.get('error', '')))}")
    everything = list(range(len(requests)))
    if decision == "run":
        if [e.get("requests") for e in executed] != [everything]:
            problems.append(f"call {name}: admitted whole but not executed whole")
        if whole > budget:
            problems.append(f"call {name}: admitted whole, measured peak {whole} exceeds the budget {budget}")
    elif decision == "split":
        problems += check_split(sc, spec, entry, rec, runtime, m)
    else:
        singles = [peak(spec, [r]) for r in requests]
        m["single_request_peaks_max"] = max(singles)
        if not any(s * SAFETY > budget for s in singles):
            problems.append(f"call {name}: refused, but every request fits the budget alone (largest measured peak "
                            f"{max(singles)}, budget {budget})")  # fmt: skip
    return problems


def priced(where: str, demand: int, measured: int, upper: float) -> list[str]:
    if demand < measured:
        return [f"{where}: priced {demand} bytes, below its measured peak {measured} ({demand / measured:.3f}x)"]
    if demand > measured * upper:
        return [f"{where}: priced {demand} bytes, {demand / measured:.3f}x its measured peak {measured} (limit "
                f"{upper:.3f}x: needless splits)"]  # fmt: skip
    return []


def check_split(sc: Scenario, spec: dict[str, Any], entry: dict[str, Any], rec: dict[str, Any], runtime: dict[str, Any],
                m: dict[str, Any]) -> list[str]:  # fmt: skip
    """Pieces partition the requests in order, each fits and is priced within bounds, and no piece
    could have taken the next request (the oracle's price of the two together is over budget)."""
    name, requests, budget, pieces = entry["name"], entry["requests"], spec["budget_bytes"], rec["pieces"]
    if [i for p in pieces for i in p] != list(range(len(requests))) or len(pieces) < 2 or not all(pieces):
        return [f"call {name}: split pieces {one_line(str(pieces), 120)} do not partition the requests in order"]
    if len(rec["piece_demand_bytes"]) != len(pieces):
        return [f"call {name}: {len(pieces)} pieces but {len(rec['piece_demand_bytes'])} piece prices"]
    problems = [] if [e.get("requests") for e in rec["executed"]] == pieces else [
        f"call {name}: the executed pieces are not the planned ones"]  # fmt: skip
    for piece, following in zip(pieces, pieces[1:], strict=False):
        merged = prices([requests[i] for i in [*piece, following[0]]], spec["model"], runtime).demand
        if merged <= budget:
            problems.append(f"call {name}: pieces {piece[0]}..{piece[-1]} and {following[0]}.. split needlessly: "
                            f"together they price {merged}, within the budget {budget}")  # fmt: skip
    m["piece_peaks"], m["piece_demands"] = [], rec["piece_demand_bytes"]
    for piece, piece_demand in zip(pieces, rec["piece_demand_bytes"], strict=True):
        piece_peak = peak(spec, [requests[i] for i in piece])
        m["piece_peaks"].append(piece_peak)
        where = f"call {name} piece {piece[0]}..{piece[-1]}"
        if piece_peak > budget or piece_demand > budget:
            problems.append(f"{where}: priced {piece_demand}, measured peak {piece_peak}: over the budget {budget}")
        problems += priced(where, piece_demand, piece_peak, SAFETY * (1 + sc.slack))
    return problems


def unit_time(sc: Scenario, name: str, inputs: judgekit.PhaseInputs, m: dict[str, Any]) -> list[str]:
    """A planning-only call's time by the host's clock: the scenario's whole run phase, alone in
    its launch unit (revision code can tell it is graded and time itself as it likes)."""
    m |= {"unit_s": inputs.duration_s, "unit_time_limit_s": sc.unit_time_limit_s}
    if inputs.unit_scenarios != 1:
        raise GraderFault(f"call {name}: the scenario was not run alone, so its time cannot be measured")
    if inputs.timed_out or inputs.duration_s is None or inputs.duration_s > sc.unit_time_limit_s:
        return [f"call {name}: planning took {inputs.duration_s} s by the host's clock (the whole run, start-up "
                f"included; stopped: {inputs.timed_out}), limit {sc.unit_time_limit_s:g} s"]  # fmt: skip
    return []


def make_kit(inputs: judgekit.PhaseInputs) -> judgekit.JudgeKit:
    def compare(sc: Scenario, obs: Observation) -> judgekit.Verdict:
        metrics: dict[str, Any] = {"calls": {}}
        problems: list[str] = []
        try:
            for spec, records in zip(sc.specs(), obs.records, strict=True):
                for entry in spec["calls"]:
                    m = metrics["calls"][entry["name"]] = {}
                    problems += check_call(sc, spec, entry, records.get(entry["name"]), inputs, m)
        except GraderFault as fault:
            return judgekit.Verdict("retry", f"grader fault, not a verdict: {fault}", metrics)
        ratios = [c["demand_over_peak"] for c in metrics["calls"].values() if "demand_over_peak" in c]
        metrics = {"worst_demand_over_peak": min(ratios) if ratios else None, **metrics}
        if problems:
            problems.sort(key=lambda p: "budget" not in p and "failed in the run" not in p)
            return judgekit.Verdict("fail", "; ".join(problems)[:1500], metrics)
        return judgekit.Verdict("pass", f"{len(metrics['calls'])} call(s): every admitted call fits, every price "
                                "within bounds", metrics)  # fmt: skip

    return judgekit.JudgeKit("AdmissionBackwardOOM", Scenario.from_request, observe, compare)


if __name__ == "__main__":
    judgekit.main_with(make_kit)
