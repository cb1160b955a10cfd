"""Pinned peaks of the shipped rank: the measurements the judge reads instead of keeping a copy
of the workspace's rank (host side: the case runtime's python, never in a grading sandbox).

    python envs/admission_backward_oom/grader/measure.py           # rewrite peaks.json
    python envs/admission_backward_oom/grader/measure.py --check   # exit 1 if it is stale

For every executed call of every scenario, the shipped ``workspace/packrl`` rank (the README's
memory meter, model, head and trainer, never a revision's) measures the peak of every run of
consecutive requests: every piece a plan can run, whole calls and single requests included. Each
peak is keyed by :func:`key` of the piece (its model, runtime and requests), so a table that no
longer matches the scenarios has no entry for them; ``workspace`` pins the digests of the rank's
files (``tests/test_memory_case.py`` checks both).
"""
from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
WORKSPACE = HERE.parent / "workspace"
PEAKS = HERE / "peaks.json"
RANK_FILES = ("calls.py", "config.py", "head.py", "memory.py", "model.py", "trainer.py")


def key(model: dict[str, Any], runtime: dict[str, Any], requests: list[dict[str, Any]]) -> str:
    """The table key of one piece: a digest of exactly what the rank would run."""
    blob = json.dumps({"model": model, "runtime": runtime, "requests": requests}, sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()


def workspace_digests() -> dict[str, str]:
    return {name: hashlib.sha256((WORKSPACE / "packrl" / name).read_bytes()).hexdigest() for name in RANK_FILES}


def measure() -> dict[str, Any]:
    """The table, measured now on the shipped rank."""
    import tomllib  # noqa: PLC0415

    import torch  # noqa: PLC0415

    sys.path[:0] = [str(WORKSPACE), str(HERE / "kit"), str(HERE.parents[2] / "gym_trainfail" / "harnesslib")]
    from packrl.calls import Call  # noqa: PLC0415
    from packrl.config import ModelConfig, RuntimeConfig, from_dict  # noqa: PLC0415
    from packrl.model import Decoder  # noqa: PLC0415
    from packrl.trainer import run_call  # noqa: PLC0415
    from scenario import Scenario  # noqa: PLC0415

    torch.set_num_threads(1)
    peaks: dict[str, int] = {}
    for raw in tomllib.loads((HERE / "scenarios.toml").read_text())["scenario"]:
        for spec in Scenario.from_request(raw).specs():
            model = Decoder.build(from_dict(ModelConfig, spec["model"]), from_dict(RuntimeConfig, spec["runtime"]))
            for entry in (e for e in spec["calls"] if e["execute"]):
                call, n = Call.from_dicts(entry["requests"]), len(entry["requests"])
                for i in range(n):
                    for j in range(i + 1, n + 1):
                        piece = key(spec["model"], spec["runtime"], entry["requests"][i:j])
                        peaks[piece] = run_call(model, call.subset(list(range(i, j)))).peak_bytes
    return {"workspace": workspace_digests(), "peaks": dict(sorted(peaks.items()))}


def main() -> None:
    if "--check" in sys.argv[1:]:
        pinned = json.loads(PEAKS.read_text())
        current = measure()
        stale = pinned != current
        print(f"{PEAKS}: {'stale: rerun without --check' if stale else 'current'} ({len(current['peaks'])} peaks)")
        sys.exit(1 if stale else 0)
    table = measure()
    PEAKS.write_text(json.dumps(table, indent=1) + "\n")
    print(f"wrote {PEAKS} ({len(table['peaks'])} peaks)")


if __name__ == "__main__":
    main()
