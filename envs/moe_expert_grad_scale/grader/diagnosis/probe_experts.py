"""Probe: does the expert-parallel size change what training computes?

Trains the shipped job twice from the same data and initial checkpoint, 4 steps each, with
`parallel.expert_parallel_size` 1 and 2 (scripts/launch.sh configs/ep2.yaml), then reads every
rank's saved experts and prints, for every expert parameter, its L2 norm after training labelled
by the expert-parallel size, and the largest difference between the two runs. The README
requires the two runs to agree (up to float32 rounding).

    python outputs/probe_experts.py
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import torch

STEPS = 4


def run(command: list[str]) -> None:
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    result = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if result.returncode:
        print(result.stdout[-4000:])
        raise SystemExit(f"exit {result.returncode}: {' '.join(command)}")


def experts(run_name: str) -> dict[tuple[int, str], torch.Tensor]:
    final = Path("outputs") / run_name / "checkpoints" / "final"
    found: dict[tuple[int, str], torch.Tensor] = {}
    for path in sorted(final.glob("rank*.pt")):
        state = torch.load(path, map_location="cpu", weights_only=True)
        for gid, params in state["experts"].items():
            for name, value in params.items():
                found.setdefault((int(gid), name), value.double())
    return found


def main() -> None:
    if not (Path("data/train.pt").is_file() and Path("checkpoints/init/model.pt").is_file()):
        run([sys.executable, "-m", "moetrain.prepare", "--config", "configs/ep2.yaml"])
    runs = {}
    for ep in (1, 2):
        name = f"probe-ep{ep}"
        print(f"probe: expert_parallel_size={ep}, train.steps={STEPS}", flush=True)
        run(["bash", "scripts/launch.sh", "configs/ep2.yaml", f"parallel.expert_parallel_size={ep}",
             f"train.steps={STEPS}", f"run_name={name}"])
        runs[ep] = experts(name)
    worst = 0.0
    for key in sorted(runs[1]):
        gid, name = key
        for ep, found in runs.items():
            print(f"ep {ep} expert {gid} {name} l2={found[key].norm().item():.9g}")
        worst = max(worst, (runs[2][key] - runs[1][key]).abs().max().item())
    print(f"max |ep2 - ep1| over expert parameters: {worst:.3e}")


if __name__ == "__main__":
    main()
