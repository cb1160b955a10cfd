"""Probe: does every parameter move in the FSDP run as it does in one process?

Writes seeded initial weights, runs the pipeline's own trainer (pulsenet.train,
configs/train.toml) on 2 ranks from them, trains the same configuration in one process on the
whole global batch (plain PulseNet, the pipeline's build_optimizer), and prints for every
parameter how far it moved from its initial value in each:

    moved run head.weight=0.000000
    moved reference head.weight=0.073100

    python outputs/probe_moves.py
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import torch
from torch import nn

sys.path.insert(0, str(Path.cwd()))
from pulsenet import config, data  # noqa: E402
from pulsenet.model import PulseNet  # noqa: E402
from pulsenet.optim import apply_trainable, build_optimizer  # noqa: E402

OUT = Path("outputs/probe")
OUT.mkdir(parents=True, exist_ok=True)
cfg = config.read("configs/train.toml", [])
m = cfg.model
torch.manual_seed(0)
init = PulseNet(m.features, m.width, m.blocks, m.classes)
torch.save(init.state_dict(), OUT / "init.pt")
table = OUT / "pulses.pt"
torch.save(data.synthesize(features=m.features, classes=m.classes), table)
world = 2
subprocess.run(["torchrun", "--standalone", "--nproc_per_node", str(world), "-m", "pulsenet.train",
                "--config", "configs/train.toml", f"model.weights={OUT / 'init.pt'}", f"data.table={table}",
                f"run.out={OUT}"], check=True, env={**os.environ, "OMP_NUM_THREADS": "1"})
run = torch.load(OUT / "model.pt", weights_only=True)

ref = PulseNet(m.features, m.width, m.blocks, m.classes)
ref.load_state_dict(torch.load(OUT / "init.pt", weights_only=True))
apply_trainable(ref, cfg.finetune.trainable)
opt = build_optimizer(ref, cfg.optim)
window, label = data.load(table)
for step in range(cfg.run.steps):
    rows = torch.cat([data.rank_rows(step, r, world, cfg.data.per_rank, window.shape[0]) for r in range(world)])
    opt.zero_grad(set_to_none=True)
    nn.functional.cross_entropy(ref(window[rows]), label[rows]).backward()
    opt.step()
start = torch.load(OUT / "init.pt", weights_only=True)
for name, p in ref.named_parameters():
    print(f"moved run {name}={float((run[name] - start[name]).abs().max()):.6f}")
    print(f"moved reference {name}={float((p.detach() - start[name]).abs().max()):.6f}")
