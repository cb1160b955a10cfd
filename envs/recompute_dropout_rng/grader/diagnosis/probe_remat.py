"""Probe: does recomputation change the gradient when the blocks hold dropout?

Run from the workspace root (one process, no torchrun needed):

    python outputs/probe_remat.py

Builds the model of configs/small.toml the way petite.train does (same seeding), once per
``remat.mode`` (off, blocks, segments), from the same initial weights, the same rows and the same
dropout stream state, and runs one training forward and backward each. Prints, per step and mode,
the gradient norm ("step 0 mode=blocks grad_norm ...") and each mode's relative L2 distance from
the gradient with nothing recomputed. The README says recomputation is exact, so every mode
should print the same norm and a distance near 1e-7.
"""
from __future__ import annotations

import copy
import os
import sys

sys.path.insert(0, os.getcwd())

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from petite import remat  # noqa: E402
from petite.corpus import Batches  # noqa: E402
from petite.net import PetiteLM  # noqa: E402
from petite.settings import load  # noqa: E402


def main() -> None:
    cfg = load("configs/small.toml", sys.argv[1:])
    torch.manual_seed(cfg.train.seed)
    base = PetiteLM(cfg.model)
    rows = Batches(cfg.data.path, cfg.model.seq_len, cfg.train.batch_size, 0, 1, cfg.train.seed).next()
    grads = {}
    for mode in ("off", "blocks", "segments"):
        model = copy.deepcopy(base)
        settings = copy.deepcopy(cfg.remat)
        settings.mode = mode
        remat.enable(model, settings, deterministic=cfg.train.deterministic)
        model.train()
        torch.manual_seed(cfg.train.seed + 1)  # rank 0's dropout stream
        logits = model(rows[:, :-1])
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), rows[:, 1:].reshape(-1))
        loss.backward()
        flat = torch.cat([p.grad.reshape(-1) for p in model.parameters()])
        grads[mode] = flat
        print(f"step 0 mode={mode} loss {loss.item():.6f} grad_norm {flat.norm().item():.6f}", flush=True)
    for mode in ("blocks", "segments"):
        rel = ((grads[mode] - grads["off"]).norm() / grads["off"].norm()).item()
        print(f"step 0 mode={mode} rel_l2_vs_off {rel:.3e}", flush=True)


if __name__ == "__main__":
    main()
