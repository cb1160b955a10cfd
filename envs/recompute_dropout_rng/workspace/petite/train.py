"""Entry point: ``torchrun --nproc_per_node N -m petite.train --config CONFIG [section.key=value ...]``."""
from __future__ import annotations

import json
import os
from pathlib import Path

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel

from . import remat
from .corpus import Batches
from .net import PetiteLM
from .settings import parse_args


def main() -> None:
    cfg = parse_args()
    backend = os.environ.get("TRAINFAIL_BACKEND", "gloo")
    dist.init_process_group(backend)
    rank, world = dist.get_rank(), dist.get_world_size()
    device = torch.device("cpu")
    if backend == "nccl":
        device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", "0")))
        torch.cuda.set_device(device)
    torch.use_deterministic_algorithms(cfg.train.deterministic)

    torch.manual_seed(cfg.train.seed)  # the same initial weights on every rank
    model = PetiteLM(cfg.model).to(device)
    remat.enable(model, cfg.remat, deterministic=cfg.train.deterministic)
    ddp = DistributedDataParallel(model, device_ids=[device.index] if device.type == "cuda" else None)
    optimizer = torch.optim.SGD(ddp.parameters(), lr=cfg.train.lr)
    torch.manual_seed(cfg.train.seed + 1 + rank)  # this rank's dropout stream

    batches = Batches(cfg.data.path, cfg.model.seq_len, cfg.train.batch_size, rank, world, cfg.train.seed)
    out = Path(cfg.train.output_dir)
    if rank == 0:
        out.mkdir(parents=True, exist_ok=True)
        log = (out / "metrics.jsonl").open("w")
    ddp.train()
    for step in range(cfg.train.steps):
        tokens = batches.next().to(device)
        logits = ddp(tokens[:, :-1])
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), tokens[:, 1:].reshape(-1))
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        grad_norm = torch.norm(torch.stack([p.grad.norm() for p in ddp.parameters() if p.grad is not None]))
        optimizer.step()
        if step % cfg.train.log_every == 0 or step + 1 == cfg.train.steps:
            mean_loss = loss.detach().clone()
            dist.all_reduce(mean_loss)
            if rank == 0:
                record = {"step": step, "loss": mean_loss.item() / world, "grad_norm": grad_norm.item()}
                log.write(json.dumps(record) + "\n")
                log.flush()
                print(f"step {step:5d}  loss {record['loss']:.4f}  grad_norm {record['grad_norm']:.4f}", flush=True)

    if rank == 0:
        log.close()
        torch.save({k: v.detach().cpu() for k, v in model.state_dict().items()}, out / "model.pt")
        print(f"saved {out / 'model.pt'}", flush=True)
    dist.barrier()
    dist.destroy_process_group()
    os._exit(0)  # torch 2.13's gloo can abort while tearing down at interpreter exit


if __name__ == "__main__":
    main()
