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
    """Run ``command`` with its output in outputs/probe-commands.log; stop if it fails."""
    log = Path("outputs") / "probe-commands.log"
    log.parent.mkdir(exist_ok=True)
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    with log.open("a") as out:
        code = subprocess.call(command, stdout=out, stderr=subprocess.STDOUT, env=env)
    if code:
        sys.exit(f"{' '.join(command)} exited with {code}; see {log}")


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
