"""Probe: does each example call's admission price cover the memory the call really peaks at?

Plans every call of examples/calls.json with the rank's planner, then runs it whole with the
memory meter but without a budget, and prints the price beside the measured peak (same line
format as `python -m packrl.serve`), then where in the call the peak happened.

    python outputs/probe_admission.py
"""
from __future__ import annotations

import json
import sys
import traceback
from pathlib import Path

sys.path.insert(0, str(Path.cwd()))

import torch  # noqa: E402

import packrl.memory as memory  # noqa: E402
from packrl.admission import AdmissionPlanner  # noqa: E402
from packrl.calls import Call  # noqa: E402
from packrl.config import ModelConfig, RuntimeConfig, from_dict  # noqa: E402
from packrl.model import Decoder  # noqa: E402
from packrl.trainer import run_call  # noqa: E402

_where: dict[str, str] = {}
_track = memory.MemoryMeter._track


def _tracking(self, tensor):  # noqa: ANN001, ANN202
    before = self.peak_bytes
    _track(self, tensor)
    if self.peak_bytes > before:
        frames = [f for f in traceback.extract_stack()[:-2] if "packrl" in f.filename]
        _where["at"] = f"{Path(frames[-1].filename).name}:{frames[-1].lineno} {frames[-1].line}" if frames else "?"
        _where["live"] = ", ".join(str(n) for n in sorted(self._storages.values(), reverse=True)[:6])


memory.MemoryMeter._track = _tracking


def main() -> None:
    path = Path("examples/calls.json")
    if not path.is_file():
        raise SystemExit("run `python -m packrl.examples` first")
    spec = json.loads(path.read_text())
    cfg, runtime = from_dict(ModelConfig, spec["model"]), from_dict(RuntimeConfig, spec.get("runtime"))
    budget = int(spec["budget_bytes"])
    planner = AdmissionPlanner(cfg, runtime, budget)
    model = Decoder.build(cfg, runtime)
    torch.set_num_threads(1)
    for entry in spec["calls"]:
        call = Call.from_dicts(entry["requests"])
        plan = planner.plan(call)
        result = run_call(model, call)  # no budget: the real peak
        n = len(call.requests)
        print(f"{entry['name']}: {plan.decision} demand={plan.demand_bytes} budget={budget}")
        print(f"{entry['name']} requests 0..{n - 1}: ok={result.peak_bytes <= plan.demand_bytes} "
              f"peak={result.peak_bytes} budget={budget}")
        print(f"    rows={call.rows} layers={cfg.num_layers} hidden={cfg.hidden_size} padded_vocab={cfg.padded_vocab}"
              f" peak/demand={result.peak_bytes / plan.demand_bytes:.3f}")
        print(f"    peak reached at {_where.get('at')}; largest live storages: {_where.get('live')}")


if __name__ == "__main__":
    main()
