"""Probe: does every rank clip by the same gradient norm?

Runs the pipeline's own trainer (gearsense.loop, recipes/default.json) on 2 ranks for 4 steps
with a binding max_grad_norm, wrapping torch.nn.utils.clip_grad_norm_ and the FSDP wrapper's
clip_grad_norm_ so that every rank prints the norm it clipped by at every step.

    python outputs/probe_norms.py
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def rank_main() -> None:
    import torch
    from torch.distributed.fsdp import FullyShardedDataParallel

    rank = int(os.environ["RANK"])
    calls = {"n": 0}

    def report(norm) -> None:
        print(f"rank {rank} step {calls['n']} clip_norm={float(norm):.6f}", flush=True)
        calls["n"] += 1

    plain = torch.nn.utils.clip_grad_norm_

    def watched(*args, **kwargs):
        norm = plain(*args, **kwargs)
        report(norm)
        return norm

    wrapper = FullyShardedDataParallel.clip_grad_norm_

    def watched_wrapper(self, *args, **kwargs):
        norm = wrapper(self, *args, **kwargs)
        report(norm)
        return norm

    torch.nn.utils.clip_grad_norm_ = watched
    FullyShardedDataParallel.clip_grad_norm_ = watched_wrapper
    sys.argv = ["gearsense.loop", "--recipe", "recipes/default.json", "--steps", "4", "--max-grad-norm", "0.05",
                "--out-dir", "outputs/probe"]
    from gearsense import loop

    loop.main()


if __name__ == "__main__":
    if os.environ.get("RANK") is not None:
        sys.path.insert(0, str(Path.cwd()))
        rank_main()
    else:
        nproc = os.environ.get("NPROC", "2")
        subprocess.run(["torchrun", "--standalone", f"--nproc_per_node={nproc}", __file__], check=True)
