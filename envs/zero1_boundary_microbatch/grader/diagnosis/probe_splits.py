"""Probe: do equivalent splits of the same global batch give the same update?

Prepares the shipped data if needed, then trains the pipeline's own entry point
(surrogate.train, configs/dp2.yaml) for a few steps three times on the same 32-row global
batches, split three ways: 1 rank x 8 micro-batches x 4 rows, 2 ranks x 4 x 4 (the shipped
config) and 2 ranks x 1 x 16. It prints, per split, the L2 norm of the total update
(final fp32 weights minus the bf16-rounded initial weights) and how far each update is from the
one-rank run's (relative L2). The README requires every split to give the same update, up to
bf16 rounding (a few 1e-3).

    python outputs/probe_splits.py
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

STEPS = 3
SPLITS = [(1, 8, 4), (2, 4, 4), (2, 1, 16)]  # ranks, micro-batches per step, rows per micro-batch


def run(ranks: int, accum: int, micro: int) -> Path:
    """Train one split; the folder of its outputs."""
    name = f"probe-r{ranks}-a{accum}-m{micro}"
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={ranks}",
           "-m", "surrogate.train", "--config", "configs/dp2.yaml", f"train.steps={STEPS}", f"run_name={name}",
           f"parallel.data_parallel_size={ranks}", f"data.gradient_accumulation_steps={accum}",
           f"data.micro_batch_size={micro}"]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONWARNINGS": "ignore"}
    done = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        sys.stderr.write(done.stdout[-3000:] + done.stderr[-3000:])
        raise SystemExit(f"split {ranks}x{accum}x{micro} exited with {done.returncode}")
    return Path("outputs") / name


def main() -> None:
    if not (Path("data/train.pt").is_file() and Path("checkpoints/init/model.pt").is_file()):
        subprocess.run([sys.executable, "-m", "surrogate.prepare", "--config", "configs/dp2.yaml"], check=True)
    import torch

    init = torch.load("checkpoints/init/model.pt", weights_only=True)
    updates = {}
    for ranks, accum, micro in SPLITS:
        final = torch.load(run(ranks, accum, micro) / "final" / "model.pt", weights_only=True)
        delta = torch.cat([(final[k] - init[k].to(torch.bfloat16).float()).reshape(-1) for k in init])
        updates[(ranks, accum, micro)] = delta.double()
    base = updates[SPLITS[0]]
    for (ranks, accum, micro), delta in updates.items():
        cosine = (delta @ base / (delta.norm() * base.norm())).item()
        print(f"split ranks={ranks} accum={accum} micro={micro} steps={STEPS}: update_l2={delta.norm().item():.6g} "
              f"cosine_to_one_rank={cosine:.6f}", flush=True)
    for split, delta in updates.items():
        rel = ((delta - base).norm() / base.norm()).item()
        print(f"split ranks={split[0]} accum={split[1]} micro={split[2]} vs 1 rank: relative difference {rel:.3e}",
              flush=True)


if __name__ == "__main__":
    main()
