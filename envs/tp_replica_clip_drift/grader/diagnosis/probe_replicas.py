"""Probe: do the tensor-parallel ranks still hold the same replicated weights after training?

Runs the pipeline's own launcher with TP=2 for a few steps (scripts/launch.sh configs/tp2.yaml),
then reads each rank's saved checkpoint and prints, for every parameter the README lists as not
split, each rank's sum of its saved bf16 weights, labelled by rank, and the
largest difference between ranks. The README requires them to be identical.

    python outputs/probe_replicas.py
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import torch

STEPS = 4
RUN = "probe-tp2"
SPLIT = ("mlp.fc1.weight", "mlp.fc1.bias", "mlp.fc2.weight")


def run(command: list[str]) -> None:
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONWARNINGS": "ignore"}
    done = subprocess.run(command, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        print(f"command failed ({done.returncode}): {' '.join(command)}")
        print((done.stdout + done.stderr)[-4000:])
        sys.exit(done.returncode)


def main() -> None:
    if not (Path("data/train.pt").is_file() and Path("checkpoints/init/model.pt").is_file()):
        run([sys.executable, "-m", "emulator.prepare", "--config", "configs/tp2.yaml"])
    print(f"probe: TP=2, train.steps={STEPS}, replicated parameters per rank", flush=True)
    run(["bash", "scripts/launch.sh", "configs/tp2.yaml", f"train.steps={STEPS}", f"run_name={RUN}"])
    final = Path("outputs") / RUN / "checkpoints" / "final"
    states = [torch.load(p, map_location="cpu", weights_only=True)["module"]
              for p in sorted(final.glob("mp_rank_*_model_states.pt"))]
    names = [n for n, v in states[0].items() if isinstance(v, torch.Tensor) and not n.endswith(SPLIT)]
    for name in names:
        for rank, state in enumerate(states):
            print(f"rank {rank} {name} sum={state[name].float().sum().item():.9g}")
        spread = max((s[name].float() - states[0][name].float()).abs().max().item() for s in states[1:])
        print(f"max |rank r - rank 0| {name}: {spread:.3e}")


if __name__ == "__main__":
    main()
