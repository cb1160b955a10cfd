"""Training entry point: ``torchrun --nproc_per_node=N -m relaylm.train --config CONFIG [k=v ...]``."""
from __future__ import annotations

import json
import os

import torch
import torch.distributed as dist

from relaylm import data, layout, model, settings
from relaylm.schedule import run_step
from relaylm.tied import allreduce_tied_grad
from relaylm.zero import ShardedMomentumSGD


def main() -> None:
    cfg = settings.load()
    dist.init_process_group(os.environ.get("TRAINFAIL_BACKEND", "gloo"))
    torch.manual_seed(cfg.get("seed"))
    lay = layout.build(cfg.get("pipeline.stages"))
    mcfg = cfg.get("model")

    stage = model.Stage(mcfg, lay.stage, lay.stages)
    init_path = mcfg["init_checkpoint"]
    full = torch.load(init_path, weights_only=True) if init_path else model.initial_state(mcfg, cfg.get("seed"))
    model.load_stage(stage, full)

    opt = ShardedMomentumSGD(stage.parameters(), cfg.get("optim.lr"), cfg.get("optim.momentum"),
                             lay.dp_group, lay.dp_size, lay.dp_rank)
    rows = data.load(cfg.get("data.path"), cfg.get("data.seq_len"))
    steps, save_every = cfg.get("train.steps"), cfg.get("train.save_every")
    run_dir = cfg.run_dir
    writer = lay.last and lay.dp_rank == 0
    if writer:
        run_dir.mkdir(parents=True, exist_ok=True)
        metrics = open(run_dir / "metrics.jsonl", "w")

    for step in range(steps):
        opt.zero_grad()
        tokens, targets = data.replica_batch(rows, step, cfg.get("data.global_batch"), lay.dp_size, lay.dp_rank)
        loss = run_step(stage, lay, tokens, targets, cfg.get("pipeline.micro_batches"), mcfg["hidden_size"])
        opt.reduce_gradients()
        allreduce_tied_grad(stage, lay)
        opt.step()

        if lay.last:
            value = torch.tensor([loss])
            dist.all_reduce(value, group=lay.dp_group)
            loss = float(value) / lay.dp_size
        if writer:
            metrics.write(json.dumps({"step": step, "loss": loss}) + "\n")
            metrics.flush()
            print(f"step {step:4d}  loss {loss:.5f}", flush=True)
        done = step + 1
        if done % save_every == 0 or done == steps:
            folder = run_dir / "checkpoints" / f"step_{done:05d}"
            folder.mkdir(parents=True, exist_ok=True)
            torch.save(stage.full_state(), folder / f"stage{lay.stage}-dp{lay.dp_rank}.pt")

    if writer:
        metrics.close()
    dist.barrier()
    dist.destroy_process_group()
    os._exit(0)


if __name__ == "__main__":
    main()
