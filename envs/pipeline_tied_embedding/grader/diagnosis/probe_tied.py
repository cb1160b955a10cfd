"""Study probe: compare the two copies of the tied table in a run's per-step checkpoints.

    python outputs/probe_tied.py outputs/<run_name>

Prints, per saved step and replica, the L2 norm of stage 0's embed.weight and of the last stage's
head.weight ("step 1 replica 0 stage 0 table_l2=..."), then the largest gap between the copies.
"""
import sys
from pathlib import Path

import torch

run = Path(sys.argv[1])
worst = 0.0
for folder in sorted((run / "checkpoints").glob("step_*")):
    step = int(folder.name.split("_")[1])
    files = sorted(folder.glob("stage*-dp*.pt"))
    last = max(int(f.name[5:f.name.index("-")]) for f in files)
    replicas = sorted({int(f.stem.split("-dp")[1]) for f in files})
    for d in replicas:
        emb = torch.load(folder / f"stage0-dp{d}.pt", weights_only=True)["embed.weight"]
        head = torch.load(folder / f"stage{last}-dp{d}.pt", weights_only=True)["head.weight"]
        print(f"step {step} replica {d} stage 0 table_l2={float(emb.norm()):.7f}")
        print(f"step {step} replica {d} stage {last} table_l2={float(head.norm()):.7f}")
        worst = max(worst, float((emb - head).abs().max()))
print(f"max |embed.weight - head.weight| over saved steps: {worst:.3e}")
