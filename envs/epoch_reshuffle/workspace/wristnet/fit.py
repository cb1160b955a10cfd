"""Train GestureNet with DDP: ``torchrun ... -m wristnet.fit --config CONFIG [--set k=v ...]``."""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel

from wristnet.batching import make_loader
from wristnet.net import GestureNet
from wristnet.settings import load


def begin_epoch(loader: torch.utils.data.DataLoader, epoch: int) -> None:
    """Tell the loader's sampler which epoch starts (a DistributedSampler shuffles by epoch)."""
    sampler = getattr(loader, "sampler", None)
    if callable(getattr(sampler, "set_epoch", None)):
        sampler.set_epoch(epoch)


def main() -> None:
    parser = argparse.ArgumentParser(description="train GestureNet with DDP")
    parser.add_argument("--config", required=True)
    parser.add_argument("--set", dest="assignments", action="append", default=[])
    args = parser.parse_args()
    cfg = load(args.config, args.assignments)
    data, model_cfg, train, run = cfg["data"], cfg["model"], cfg["train"], cfg["run"]

    dist.init_process_group(os.environ.get("TRAINFAIL_BACKEND", "gloo"))
    rank, world = dist.get_rank(), dist.get_world_size()
    device = torch.device("cpu")
    if torch.cuda.is_available() and dist.get_backend() == "nccl":
        device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", 0)))
        torch.cuda.set_device(device)

    table = torch.load(data["table"], weights_only=True)
    loader = make_loader(table, data["batch_size"], num_replicas=world, rank=rank, seed=data["shuffle_seed"],
                         drop_last=data["drop_last"])
    net = GestureNet(data["features"], model_cfg["hidden"], data["classes"])
    net.load_state_dict(torch.load(model_cfg["init"], weights_only=True))
    net.to(device)
    ddp = DistributedDataParallel(net, device_ids=[device.index] if device.type == "cuda" else None)
    opt = torch.optim.SGD(ddp.parameters(), lr=train["lr"], momentum=train["momentum"])

    out = Path(run["out_dir"]) / run["name"]
    if rank == 0:
        out.mkdir(parents=True, exist_ok=True)
        log = (out / "log.jsonl").open("w", encoding="utf-8")
    step, started = 0, time.time()
    for epoch in range(train["epochs"]):
        begin_epoch(loader, epoch)
        for windows, gesture in loader:
            windows, gesture = windows.to(device), gesture.to(device)
            opt.zero_grad(set_to_none=True)
            loss = F.cross_entropy(ddp(windows), gesture)
            loss.backward()
            opt.step()
            step += 1
            if rank == 0 and step % train["log_every"] == 0:
                line = {"step": step, "epoch": epoch, "loss": loss.item(), "time": round(time.time() - started, 3)}
                log.write(json.dumps(line) + "\n")
                log.flush()
    if rank == 0:
        log.close()
        torch.save({k: v.detach().cpu() for k, v in net.state_dict().items()}, out / "model.pt")
        print(f"{step} steps in {train['epochs']} epochs; weights in {out / 'model.pt'}", flush=True)
    dist.barrier()
    dist.destroy_process_group()
    os._exit(0)


if __name__ == "__main__":
    main()
