"""``trainfail case new``: a new case folder that passes schema validation.

The scaffold is a small but real two-rank gloo pipeline with a two-phase grader (a run kit
that launches it, a judge that decides; docs/grader-protocol.md), a fresh grader canary, one
healthy and one failure scenario, and a reference patch. It is a starting point: it does not
pass qualification until the author puts a real failure in it (qualification says why).
"""

from __future__ import annotations

import difflib
import re
import secrets
from pathlib import Path

from gym_trainfail.cases import CASE_ID_RE, CaseSpec, load_case
from gym_trainfail.errors import TrainFailError

_CASE_TOML = '''\
id = "{case_id}"
title = "{name}: describe the failure in one line"
summary = """
What goes wrong, for operators and case authors (the agent never sees this).
"""

[provenance]
sources = ["https://github.com/OWNER/REPO/issues/NUMBER"]
reproduced = """
Which mechanism of the public issue this case reproduces, with which real libraries.
"""
simplified = """
What is smaller or synthetic here (model size, data, ranks), and why that keeps the mechanism.
"""

[prompt]
text = """
You are working in a small team's training repository at /workspace; README.md says how it is
run and what it must compute. Review the distributed training path, make the changes you
judge necessary, check them with `run_job`, then `submit` your revision and `finish`.
"""

[topology]
world_size = 2
tensor_parallel = 1
devices_per_job = 2

[grader]
# The run phase: runs the revision (hostile); sees only grader/kit at /kit.
run_command = ["python", "/kit/run.py"]
# The judge phase: no revision code; reads the run's artifacts and writes the verdicts.
judge_command = ["python", "/grader/judge.py"]

[budgets]
steps = 150
wall_seconds = 5400
device_seconds = 7200
tokens = 4000000

[workspace]
exclude = ["outputs"]
check_command = "bash run.sh"
'''

_README = """\
# {name}

`bash run.sh` trains on `$NPROC` CPU ranks (gloo) and writes `outputs/metrics.json`.

The reported `global_mean` must be the mean of every sample on every rank.
"""

_RUN_SH = """\
#!/usr/bin/env bash
set -euo pipefail
cd "$(dirname "$0")"
exec torchrun --standalone --nproc_per_node "${NPROC:-2}" train.py "$@"
"""

_TRAIN_PY = '''\
"""Computes a global statistic across ranks and writes it to outputs/metrics.json."""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

import torch
import torch.distributed as dist


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default="outputs/metrics.json")
    args = parser.parse_args()
    dist.init_process_group(os.environ.get("TRAINFAIL_BACKEND", "gloo"))
    rank, world = dist.get_rank(), dist.get_world_size()
    generator = torch.Generator().manual_seed(args.seed + rank)
    samples = torch.rand(4 + 3 * rank, generator=generator)  # ranks hold different amounts of data
    local_mean = samples.mean()
    dist.all_reduce(local_mean)
    global_mean = local_mean / world
    if rank == 0:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps({{"global_mean": global_mean.item()}}))
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
'''

_SCENARIOS = """\
# Private: the agent never sees this folder.
[[scenario]]
name = "equal-shards"
kind = "healthy"
devices = 1
timeout_s = 300
[scenario.params]
world_size = 1
seed = 0

[[scenario]]
name = "two-ranks"
kind = "failure"
devices = 2
timeout_s = 300
[scenario.params]
world_size = 2
seed = 0
"""

_KIT_RUN = '''\
"""Run phase for {case_id}: launch the pipeline for each scenario, keep its outputs.

Runs beside the revision's code, which can read and change everything here: it writes no
verdict, only artifacts under --out-dir/<scenario>/ for the judge (docs/grader-protocol.md).
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import time
from pathlib import Path


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--scenarios", type=Path, required=True)
    parser.add_argument("--out-dir", type=Path, required=True)
    args = parser.parse_args()
    for scenario in json.loads(args.scenarios.read_text()):
        params = scenario["params"]
        out = args.out_dir / scenario["name"]
        out.mkdir(parents=True)
        workspace = Path("/tmp") / f"workspace-{{scenario['name']}}"
        shutil.copytree(Path.cwd(), workspace)
        started = time.monotonic()
        with (out / "train.log").open("wb") as log:
            proc = subprocess.run(
                ["torchrun", "--standalone", "--nproc_per_node", str(params["world_size"]), "train.py",
                 "--seed", str(params["seed"]), "--out", str(out / "metrics.json")],
                cwd=workspace, stdout=log, stderr=subprocess.STDOUT, timeout=scenario.get("timeout_s", 300),
            )
        timings = {{"total_s": time.monotonic() - started, "exit_code": proc.returncode}}
        (out / "timings.json").write_text(json.dumps(timings))


if __name__ == "__main__":
    main()
'''

_JUDGE = '''\
"""Judge phase for {case_id}: compare what each run reported with the grader's own answer.

No revision code runs here. Everything under --artifacts was written next to the revision's
code: read it as bounded, type-checked data, never execute it.

{canary}
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path
from typing import Any

import torch

TOLERANCE = 1e-6


def oracle(world_size: int, seed: int) -> float:
    """The grader's own answer: the mean over every sample of every rank."""
    samples = [torch.rand(4 + 3 * r, generator=torch.Generator().manual_seed(seed + r)) for r in range(world_size)]
    return torch.cat(samples).mean().item()


def reported_mean(folder: Path) -> float | None:
    """The run's ``global_mean``, or None when it is missing or malformed."""
    path = folder / "metrics.json"
    if not path.is_file() or path.is_symlink() or path.stat().st_size > 10_000:
        return None
    try:
        value = json.loads(path.read_text()).get("global_mean")
    except (ValueError, AttributeError):
        return None
    return float(value) if isinstance(value, int | float) and math.isfinite(value) else None


def judge(scenario: dict[str, Any], folder: Path) -> dict[str, Any]:
    """One scenario's outcome."""
    params = scenario["params"]
    reported = reported_mean(folder)
    if reported is None:
        return {{"status": "fail", "reason": "the run wrote no usable outputs/metrics.json"}}
    error = abs(reported - oracle(params["world_size"], params["seed"]))
    ok = error <= TOLERANCE
    return {{"status": "pass" if ok else "fail", "reason": "" if ok else f"global_mean off by {{error:.3e}}",
            "metrics": {{"abs_error": error}}}}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--scenarios", type=Path, required=True)
    parser.add_argument("--artifacts", type=Path, required=True)
    parser.add_argument("--run", type=Path, required=True)
    parser.add_argument("--out-dir", type=Path, required=True)
    args = parser.parse_args()
    for scenario in json.loads(args.scenarios.read_text()):
        outcome = judge(scenario, args.artifacts / scenario["name"])
        (args.out_dir / f"{{scenario['name']}}.json").write_text(json.dumps(outcome))


if __name__ == "__main__":
    main()
'''

_GRADER_README = """\
# Grader of {case_id}

`kit/run.py` (the run phase, beside the revision's code) launches the pipeline per scenario;
`judge.py` (trusted) compares what it reported with the grader's own answer.

## Forced settings

Every setting the grader forces away from the shipped configuration or README, and the scenario
that covers the shipped value (or why the objective cannot depend on it).

| setting | shipped | grader | covered by |
|---|---|---|---|
| `--out` | `outputs/metrics.json` | the run's artifact folder | where the result is written cannot change it |
| ranks | `$NPROC` (2) | 1 and 2 | `equal-shards` (1), `two-ranks` (2) |
"""

_PROMISES = """\
# Private: every dimension the workspace README promises to hold across, its value classes, and
# the scenarios covering each (docs/case-authoring.md, "Promise table"). Qualification refuses a
# class no scenario covers, and a promise covered only at its shipped value.
[[promise]]
name = "ranks"
dimension = "the number of ranks, whatever amount of data each holds"
readme = "the mean of every sample on every rank"
shipped = "2 ranks ($NPROC), holding different amounts of data"

[[promise.class]]
name = "one rank"
scenarios = ["equal-shards"]
where = {{ world_size = 1 }}

[[promise.class]]
name = "two ranks holding different amounts of data"
shipped = true
scenarios = ["two-ranks"]
where = {{ world_size = 2 }}
"""

#: The reference repair of the scaffold: sum and count across ranks, then divide.
_REPAIR = (
    "    local_mean = samples.mean()\n    dist.all_reduce(local_mean)\n    global_mean = local_mean / world\n",
    "    totals = torch.stack([samples.sum(), torch.tensor(float(samples.numel()))])\n"
    "    dist.all_reduce(totals)\n    global_mean = totals[0] / totals[1]\n",
)


def _reference_patch(train_py: str) -> str:
    before, after = _REPAIR
    repaired = train_py.replace(before, after)
    diff = difflib.unified_diff(
        train_py.splitlines(keepends=True), repaired.splitlines(keepends=True), "a/train.py", "b/train.py"
    )
    return "".join(diff)


def case_name(name: str) -> str:
    """``my-new case`` -> ``MyNewCase`` (the Name part of the id)."""
    parts = [p for p in re.split(r"[^A-Za-z0-9]+", name) if p]
    if not parts:
        raise TrainFailError(f"cannot make a case name from {name!r}; use letters and digits, e.g. 'FSDPStateSkew'")
    joined = "".join(p[0].upper() + p[1:] for p in parts)
    if not joined[0].isalpha():
        raise TrainFailError(f"a case name must start with a letter, got {name!r}")
    return joined


def folder_name(name: str) -> str:
    """``FSDPStateSkew`` -> ``fsdp_state_skew``."""
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "_", name).lower()


def scaffold_case(name: str, parent: Path, namespace: str = "TrainFail") -> CaseSpec:
    """Write a new case folder under ``parent`` and return it, validated."""
    pascal = case_name(name)
    case_id = f"{namespace}/{pascal}-v0"
    if not CASE_ID_RE.match(case_id):
        raise TrainFailError(f"{case_id!r} is not a valid case id (Namespace/Name-vN)")
    root = parent / folder_name(pascal)
    if root.exists():
        raise TrainFailError(f"{root} already exists; choose another name or remove it")
    canary = f"TRAINFAIL-CANARY-{secrets.token_hex(16)}"
    files = {
        "case.toml": _CASE_TOML.format(case_id=case_id, name=pascal),
        "workspace/README.md": _README.format(name=pascal),
        "workspace/run.sh": _RUN_SH,
        "workspace/train.py": _TRAIN_PY.format(),
        "grader/scenarios.toml": _SCENARIOS,
        "grader/promises.toml": _PROMISES.format(),
        "grader/kit/run.py": _KIT_RUN.format(case_id=case_id),
        "grader/judge.py": _JUDGE.format(case_id=case_id, canary=canary),
        "grader/README.md": _GRADER_README.format(case_id=case_id),
        "grader/reference.patch": _reference_patch(_TRAIN_PY.format()),
    }
    for relative, content in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content)
    (root / "workspace" / "run.sh").chmod(0o755)
    (root / "grader" / "wrong_repairs").mkdir()
    return load_case(root)
