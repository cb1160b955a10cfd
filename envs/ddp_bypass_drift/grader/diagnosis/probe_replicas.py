"""Probe: do the data-parallel ranks still hold the same weights after a few steps?

Prepares the shipped data if needed, then trains the pipeline's own entry point
(gaitnet.train, configs/ddp.yaml) on 2 ranks for a few steps under torchrun, and before the
ranks leave, gathers every parameter's L2 norm from every rank; rank 0 prints one line per rank
and parameter, and the largest difference between ranks. The README requires them identical.

    python outputs/probe_replicas.py
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

STEPS = 4
RUN = "probe-ddp"


def rank_entry() -> None:
    """Inside each rank: the pipeline's main(), with a look at the weights before it exits."""
    sys.path.insert(0, os.getcwd())
    import torch
    import torch.distributed as dist
    from gaitnet import train

    held = {}
    build = train.build

    def keep(cfg):  # type: ignore[no-untyped-def]
        ddp, optimizer = build(cfg)
        held["model"] = ddp.module
        return ddp, optimizer

    leave = train.distributed.shutdown

    def report() -> None:
        world = dist.get_world_size()
        worst = 0.0
        for name, param in held["model"].named_parameters():
            sums = [torch.zeros(()) for _ in range(world)]
            dist.all_gather(sums, param.detach().double().norm().float().reshape(()))
            if dist.get_rank() == 0:
                for rank, value in enumerate(sums):
                    print(f"rank {rank} {name} l2={value.item():.9g}", flush=True)
                worst = max(worst, max(abs(v.item() - sums[0].item()) for v in sums))
        if dist.get_rank() == 0:
            print(f"max |rank r - rank 0| of a parameter norm: {worst:.3e}", flush=True)
        leave()

    train.build = keep
    train.distributed.shutdown = report
    train.main(["--config", "configs/ddp.yaml", f"train.steps={STEPS}", f"run_name={RUN}"])


def main() -> None:
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONWARNINGS": "ignore"}
    if not (Path("data/train.pt").is_file() and Path("checkpoints/init/model.pt").is_file()):
        subprocess.run([sys.executable, "-m", "gaitnet.prepare", "--config", "configs/ddp.yaml"], env=env, check=True)
    print(f"probe: 2 data-parallel ranks, train.steps={STEPS}, parameter norms per rank", flush=True)
    done = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2",
                           __file__, "--rank-entry"], env=env, capture_output=True, text=True)
    lines = [ln for ln in done.stdout.splitlines() if ln.startswith(("rank ", "max ", "step "))]
    print("\n".join(lines))
    if done.returncode != 0:
        print(f"torchrun exited with {done.returncode}:\n{done.stderr[-3000:]}")
        sys.exit(done.returncode)


if __name__ == "__main__":
    if "--rank-entry" in sys.argv:
        rank_entry()
    else:
        main()
