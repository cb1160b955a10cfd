"""Probe: does a run that is stopped and resumed train like one that was never stopped?

Runs the pipeline's own launcher three times with configs/base.yaml: 12 steps uninterrupted;
6 steps; then a resume of that run from checkpoint-6 to step 12. Prints each run's logged loss at
steps 5-12 and the sum of its saved parameters at checkpoint-12, labelled uninterrupted /
resumed. The README requires them to be the same.

    python outputs/probe_resume.py
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import torch

STEPS, STOP = 12, 6


def run(args: list[str]) -> None:
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONWARNINGS": "ignore"}
    done = subprocess.run(["bash", "scripts/launch.sh", "configs/base.yaml", *args], env=env,
                          capture_output=True, text=True)
    if done.returncode != 0:
        print(f"launch failed ({done.returncode}): {' '.join(args)}")
        print((done.stdout + done.stderr)[-4000:])
        sys.exit(done.returncode)


def losses(run_name: str) -> dict[int, float]:
    lines = (Path("outputs") / run_name / "metrics.jsonl").read_text().splitlines()
    return {int(r["step"]): float(r["loss"]) for r in map(json.loads, lines)}


def param_sum(run_name: str) -> float:
    state = torch.load(Path("outputs") / run_name / f"checkpoint-{STEPS}" / "model.pt", weights_only=True)
    return float(sum(v.double().sum() for v in state.values()))


def main() -> None:
    if not (Path("data/train.pt").is_file() and Path("checkpoints/init/model.pt").is_file()):
        subprocess.run([sys.executable, "-m", "fcast.prepare", "--config", "configs/base.yaml"], check=True)
    for name in ("probe-full", "probe-resumed"):
        subprocess.run(["rm", "-rf", str(Path("outputs") / name)], check=True)
    print(f"probe: configs/base.yaml, {STEPS} steps uninterrupted vs stopped at {STOP} and resumed", flush=True)
    run([f"train.max_steps={STEPS}", "run_name=probe-full"])
    run([f"train.max_steps={STOP}", "run_name=probe-resumed"])
    run([f"train.max_steps={STEPS}", "run_name=probe-resumed",
         f"train.resume_from_checkpoint=outputs/probe-resumed/checkpoint-{STOP}"])
    full, resumed = losses("probe-full"), losses("probe-resumed")
    for step in range(STOP - 1, STEPS + 1):
        print(f"uninterrupted step {step} loss={full[step]:.9g}")
        print(f"resumed step {step} loss={resumed[step]:.9g}")
    print(f"uninterrupted checkpoint-{STEPS} param_sum={param_sum('probe-full'):.12g}")
    print(f"resumed checkpoint-{STEPS} param_sum={param_sum('probe-resumed'):.12g}")


if __name__ == "__main__":
    main()
