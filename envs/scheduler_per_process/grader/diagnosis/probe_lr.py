"""Probe: does the learning rate at each update depend on the number of processes?

Runs the pipeline's own launcher twice on the same data for one epoch: 1 process with
per-device batch 16 and 2 processes with per-device batch 8 (the same global batch, so the
README says both runs are the same training), then prints each run's logged learning rate per
update, labelled by process count, and the final loss of each.

    python outputs/probe_lr.py
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

UPDATES = 12
RUNS = ((1, 16), (2, 8))


def run(command: list[str]) -> None:
    try:
        subprocess.check_output(command, stderr=subprocess.STDOUT, text=True,
                                env=dict(os.environ, OMP_NUM_THREADS="1", PYTHONWARNINGS="ignore"))
    except subprocess.CalledProcessError as failed:
        sys.exit(f"{command} failed:\n{failed.output[-4000:]}")


def main() -> None:
    if not (Path("data/train.pt").is_file() and Path("checkpoints/init/model.pt").is_file()):
        run([sys.executable, "-m", "demandnet.prepare", "--config", "configs/train.yaml"])
    logs = {}
    for procs, batch in RUNS:
        name = f"probe-p{procs}"
        run(["bash", "scripts/launch.sh", "configs/train.yaml", f"processes={procs}",
             f"data.per_device_batch_size={batch}", "train.epochs=1", f"run_name={name}"])
        lines = (Path("outputs") / name / "metrics.jsonl").read_text(encoding="utf-8").splitlines()
        logs[procs] = [json.loads(line) for line in lines]
    print("probe: same data and global batch, 1 vs 2 processes, lr per update", flush=True)
    for k in range(UPDATES):
        for procs, _ in RUNS:
            print(f"processes={procs} update {k} lr={logs[procs][k]['lr']:.8g}")
    for procs, _ in RUNS:
        last = logs[procs][-1]
        print(f"processes={procs}: {len(logs[procs])} updates, final loss {last['loss']:.6g}")


if __name__ == "__main__":
    main()
