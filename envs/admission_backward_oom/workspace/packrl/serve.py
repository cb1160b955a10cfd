"""Run a file of calls on one trainer rank: plan each call, execute what is admitted.

    python -m packrl.serve --calls calls.json --out results.jsonl [--calls more.json --out more.jsonl ...]

``calls.json``::

    {"model": {...ModelConfig...}, "runtime": {...RuntimeConfig...}, "budget_bytes": N,
     "calls": [{"name": "c0", "requests": [{...Request...}, ...], "execute": true}, ...]}

A call with ``"execute": false`` is planned only (capacity planning); such a call may carry its
own ``"runtime"`` table to price it for another runtime configuration. Each call gives one
JSON line in ``results.jsonl`` (see README.md). Several calls files may be given, each with its
own ``--out``.
"""
from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import torch

from .admission import AdmissionPlanner
from .calls import Call
from .config import ModelConfig, RuntimeConfig, from_dict
from .model import Decoder
from .trainer import run_call


def serve_file(calls_path: Path, out_path: Path) -> None:
    """Plan and execute every call of one calls file; one JSON line per call."""
    spec = json.loads(calls_path.read_text(encoding="utf-8"))
    model_cfg = from_dict(ModelConfig, spec.get("model"))
    runtime = from_dict(RuntimeConfig, spec.get("runtime"))
    budget = int(spec["budget_bytes"])
    model = None
    out_path.parent.mkdir(parents=True, exist_ok=True)
    with out_path.open("w", encoding="utf-8") as out:
        for entry in spec["calls"]:
            execute = bool(entry.get("execute", True))
            call_runtime = runtime
            if "runtime" in entry:
                if execute:
                    raise ValueError(f"call {entry['name']}: a runtime override is for planning only")
                call_runtime = from_dict(RuntimeConfig, entry["runtime"])
            planner = AdmissionPlanner(model_cfg, call_runtime, budget)
            call = Call.from_dicts(entry["requests"])
            started = time.perf_counter()
            plan = planner.plan(call)
            plan_s = time.perf_counter() - started
            record = {"name": entry["name"], "decision": plan.decision, "demand_bytes": plan.demand_bytes,
                      "pieces": plan.pieces, "piece_demand_bytes": plan.piece_demand_bytes,
                      "reason": plan.reason, "plan_s": round(plan_s, 6), "executed": []}
            if execute and plan.decision != "refuse":
                if model is None:
                    model = Decoder.build(model_cfg, runtime)
                for piece in plan.pieces:
                    result = run_call(model, call.subset(piece), budget)
                    record["executed"].append({"requests": piece, "ok": result.ok, "peak_bytes": result.peak_bytes,
                                               "loss": result.loss, "error": result.error})
                    print(f"{entry['name']} requests {piece[0]}..{piece[-1]}: ok={result.ok} "
                          f"peak={result.peak_bytes} budget={budget}", flush=True)
            print(f"{entry['name']}: {plan.decision} demand={plan.demand_bytes} budget={budget} "
                  f"plan_s={plan_s:.4f}", flush=True)
            out.write(json.dumps(record) + "\n")
            out.flush()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=Path, action="append", required=True)
    parser.add_argument("--out", type=Path, action="append", required=True)
    args = parser.parse_args(argv)
    if len(args.calls) != len(args.out):
        parser.error("give one --out per --calls")
    torch.set_num_threads(1)
    for calls_path, out_path in zip(args.calls, args.out):
        serve_file(calls_path, out_path)


if __name__ == "__main__":
    main()
