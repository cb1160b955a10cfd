"""Training entry point: ``torchrun --nproc_per_node=TP -m seqmodel.train --config FILE [k=v ...]``."""
from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import torch
import torch.nn.functional as F

from seqmodel import config as config_mod
from seqmodel import data, model, parallel, rng
from seqmodel.sequence import allreduce_sequence_parallel_grads


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="train the sequence regressor")
    parser.add_argument("--config", required=True)
    parser.add_argument("overrides", nargs="*", help="section.key=value")
    args = parser.parse_args(argv)
    cfg = config_mod.load(args.config, args.overrides)

    parallel.init_distributed(cfg.parallel.tensor_model_parallel_size)
    device = parallel.device()
    rng.seed_everything(cfg.train.seed, on_cpu=device.type == "cpu")
    net = model.build(cfg, device)
    net.train()
    optimizer = torch.optim.SGD(net.parameters(), lr=cfg.train.lr)

    out_dir = Path(cfg.output_dir) / cfg.run_name
    rank = parallel.tp_rank()
    if rank == 0:
        out_dir.mkdir(parents=True, exist_ok=True)
    torch.distributed.barrier()
    metrics = (out_dir / "metrics.jsonl").open("w", encoding="utf-8") if rank == 0 else None

    for step in range(cfg.train.steps):
        started = time.time()
        x, y = data.batch(cfg, step)
        x, y = x.to(device), y.to(device)
        optimizer.zero_grad(set_to_none=True)
        loss = F.mse_loss(net(x).float(), y)
        loss.backward()
        allreduce_sequence_parallel_grads(net)
        optimizer.step()
        if metrics is not None and step % cfg.train.log_every == 0:
            metrics.write(json.dumps({"step": step, "loss": loss.item(),
                                      "step_time_s": time.time() - started,
                                      "wall_time": time.time()}) + "\n")
            metrics.flush()

    final = out_dir / "final"
    final.mkdir(parents=True, exist_ok=True)
    state = {k: v.detach().cpu() for k, v in net.named_parameters()}
    torch.save(state, final / f"tp_rank_{rank:02d}.pt")
    if metrics is not None:
        metrics.close()
        print(f"finished {cfg.train.steps} steps, last loss {loss.item():.6f}", flush=True)
    parallel.shutdown()


if __name__ == "__main__":
    main()
