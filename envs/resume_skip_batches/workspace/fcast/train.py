"""Data-parallel training of the forecaster, with checkpoints and resume.

    torchrun --standalone --nproc_per_node=2 -m fcast.train --config configs/base.yaml [key=value ...]

One optimizer step ("global step") averages the gradients of ``gradient_accumulation_steps``
micro-batches on every rank (DDP all-reduces on the last micro-batch of each window). An
epoch is ``len(loader) // gradient_accumulation_steps`` global steps; the micro-batches left
over at the end of a rank's shard do not fill a window and are not used. Training stops at
``train.max_steps``. See README.md for outputs and resuming.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import time
from pathlib import Path

import torch
import torch.distributed as dist
from accelerate.data_loader import skip_first_batches
from torch.nn.parallel import DistributedDataParallel

from fcast.checkpoint import checkpoint_dir, load_checkpoint, save_checkpoint
from fcast.config import load_config
from fcast.data import build_loader
from fcast.model import build_model


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="data-parallel training of the forecaster")
    parser.add_argument("--config", required=True)
    parser.add_argument("overrides", nargs="*")
    return parser.parse_args(argv)


def setup_distributed() -> tuple[int, int, torch.device]:
    """Join the process group torchrun describes; the device this rank computes on."""
    backend = os.environ.get("TRAINFAIL_BACKEND", "gloo")
    dist.init_process_group(backend=backend)
    if backend == "nccl":
        local = int(os.environ.get("LOCAL_RANK", "0"))
        torch.cuda.set_device(local)
        return dist.get_rank(), dist.get_world_size(), torch.device("cuda", local)
    return dist.get_rank(), dist.get_world_size(), torch.device("cpu")


def train(cfg: dict) -> None:
    rank, world_size, device = setup_distributed()
    torch.manual_seed(int(cfg["seed"]))
    tcfg = cfg["train"]
    model = build_model(cfg).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=float(tcfg["lr"]), momentum=float(tcfg["momentum"]))
    loader, sampler = build_loader(cfg, rank, world_size)
    accumulation = int(tcfg["gradient_accumulation_steps"])
    max_steps = int(tcfg["max_steps"])
    updates_per_epoch = len(loader) // accumulation
    if updates_per_epoch < 1:
        raise ValueError(f"{len(loader)} micro-batches per rank cannot fill one window of {accumulation}")
    num_epochs = math.ceil(max_steps / updates_per_epoch)

    global_step = 0
    resume = tcfg.get("resume_from_checkpoint")
    if resume:
        global_step = int(load_checkpoint(Path(resume), model, optimizer)["global_step"])
    ddp = DistributedDataParallel(model)

    # Where the interrupted run stopped: whole epochs done, then steps into the current one.
    epochs_trained = global_step // updates_per_epoch
    steps_trained_in_current_epoch = global_step % updates_per_epoch

    log_path = Path(cfg["output_dir"]) / cfg["run_name"] / "metrics.jsonl"
    if rank == 0:
        log_path.parent.mkdir(parents=True, exist_ok=True)
    for epoch in range(epochs_trained, num_epochs):
        if global_step >= max_steps:
            break
        sampler.set_epoch(epoch)
        batches = loader
        if epoch == epochs_trained and steps_trained_in_current_epoch > 0:
            batches = skip_first_batches(loader, steps_trained_in_current_epoch)
        window_loss = 0.0
        for micro, (features, target) in enumerate(batches):
            features, target = features.to(device), target.to(device)
            last_in_window = (micro + 1) % accumulation == 0
            sync = contextlib.nullcontext() if last_in_window else ddp.no_sync()
            with sync:
                loss = torch.nn.functional.mse_loss(ddp(features), target) / accumulation
                loss.backward()
            window_loss += float(loss.detach())
            if not last_in_window:
                continue
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
            global_step += 1
            if rank == 0 and global_step % int(tcfg["log_interval"]) == 0:
                with log_path.open("a", encoding="utf-8") as fh:
                    fh.write(json.dumps({"step": global_step, "epoch": epoch, "loss": window_loss,
                                         "time": time.time()}) + "\n")
            window_loss = 0.0
            if global_step % int(tcfg["save_steps"]) == 0 or global_step == max_steps:
                save_checkpoint(checkpoint_dir(cfg, global_step), model, optimizer, global_step, epoch, rank)
            if global_step >= max_steps or global_step % updates_per_epoch == 0:
                break
    if rank == 0:
        print(f"done: global_step={global_step} run={cfg['run_name']}", flush=True)


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    train(load_config(args.config, args.overrides))
    dist.barrier()
    dist.destroy_process_group()
    # torch 2.13's gloo can abort at interpreter exit after everything is written: leave now.
    os._exit(0)


if __name__ == "__main__":
    main()
