"""Probe: does TP=2 training log the same global gradient norm as TP=1 training?

Runs the pipeline's own launcher twice on the same consolidated checkpoint and data
(scripts/launch.sh configs/tp1.yaml, then configs/tp2.yaml, a few steps each, logging every
step) and prints the grad_norm each run recorded in its metrics.jsonl, labelled by TP size,
then the TP=2 / TP=1 ratio per step. The README requires the two to agree (~1e-6).

    python outputs/probe_tp_norms.py
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

STEPS = 4
SIZES = (1, 2)


def run(command: list[str]) -> None:
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONWARNINGS": "ignore"}
    done = subprocess.run(command, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        print(f"command failed ({done.returncode}): {' '.join(command)}")
        print((done.stdout + done.stderr)[-4000:])
        sys.exit(done.returncode)


def main() -> None:
    if not (Path("data/train.pt").is_file() and Path("checkpoints/init/model.pt").is_file()):
        run([sys.executable, "-m", "surrogate.prepare", "--config", "configs/tp2.yaml"])
    norms: dict[int, dict[int, float]] = {}
    print(f"probe: train.steps={STEPS} per launch, TP sizes {SIZES}, same checkpoint and data", flush=True)
    for size in SIZES:
        run_name = f"probe-tp{size}"
        run(["bash", "scripts/launch.sh", f"configs/tp{size}.yaml", f"train.steps={STEPS}",
             "train.log_interval=1", f"run_name={run_name}"])
        metrics = Path("outputs") / run_name / "metrics.jsonl"
        records = [json.loads(line) for line in metrics.read_text().splitlines() if line.strip()]
        norms[size] = {r["step"]: r["grad_norm"] for r in records}
        for r in records:
            print(f"TP={size} step {r['step']} grad_norm={r['grad_norm']!r} loss={r['loss']:.6f}", flush=True)
    base, other = SIZES
    for step in sorted(norms[base]):
        ratio = norms[other][step] / norms[base][step]
        print(f"ratio at step {step}: TP{other}/TP{base} grad-norm ratio {ratio:.6f}")


if __name__ == "__main__":
    main()
