"""`torchrun -m pulsenet.train --config configs/train.toml [section.key=value ...]`"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

import torch
import torch.distributed as dist
from torch import nn

from pulsenet import config, data, runtime
from pulsenet.model import PulseNet
from pulsenet.optim import apply_trainable, build_optimizer


def main() -> None:
    parser = argparse.ArgumentParser(prog="pulsenet.train")
    parser.add_argument("--config", default="configs/train.toml")
    parser.add_argument("overrides", nargs="*")
    args = parser.parse_args()
    cfg = config.read(args.config, args.overrides)

    mesh = runtime.start()
    rank, world = dist.get_rank(), dist.get_world_size()
    out = Path(cfg.run.out)
    out.mkdir(parents=True, exist_ok=True)
    table = Path(cfg.data.table)
    if rank == 0 and not table.exists():
        table.parent.mkdir(parents=True, exist_ok=True)
        torch.save(data.synthesize(features=cfg.model.features, classes=cfg.model.classes), table)
    dist.barrier()
    window, label = data.load(table)

    torch.manual_seed(cfg.run.seed)
    m = cfg.model
    model = PulseNet(m.features, m.width, m.blocks, m.classes, mesh=mesh)
    if m.weights:
        runtime.load_full_state(model, torch.load(m.weights, map_location="cpu", weights_only=True))
    apply_trainable(model, cfg.finetune.trainable)
    optimizer = build_optimizer(model, cfg.optim)
    model, optimizer = runtime.prepare(model, optimizer, mesh)

    log = open(out / "metrics.jsonl", "w") if rank == 0 else None
    for step in range(cfg.run.steps):
        rows = data.rank_rows(step, rank, world, cfg.data.per_rank, window.shape[0])
        optimizer.zero_grad(set_to_none=True)
        loss = nn.functional.cross_entropy(model(window[rows]), label[rows])
        loss.backward()
        optimizer.step()
        mean = loss.detach().clone()
        dist.all_reduce(mean)
        mean /= world
        if log is not None:
            log.write(json.dumps({"step": step, "loss": mean.item()}) + "\n")
            log.flush()
            print(f"step {step:3d}  loss {mean.item():.5f}", flush=True)

    state = runtime.full_state(model)
    if rank == 0:
        log.close()
        torch.save(state, out / "model.pt")
    runtime.stop()


if __name__ == "__main__":
    main()
