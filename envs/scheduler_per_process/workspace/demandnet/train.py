"""Data-parallel training entry point (one process per device), driven by Accelerate.

    torchrun --standalone --nproc_per_node=2 -m demandnet.train --config configs/train.yaml [key=value ...]

Writes, under ``<output_dir>/<run_name>/`` (main process):
  * ``config.yaml``     the resolved configuration;
  * ``metrics.jsonl``   one JSON record per optimizer update;
  * ``final/model.pt``  the model's state dict after the last update.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import time
from pathlib import Path
from typing import IO

import torch
import torch.distributed as dist
import yaml
from accelerate import Accelerator
from torch.utils.data import DataLoader

from demandnet.config import Config, load_config
from demandnet.data import make_loader
from demandnet.model import build_model
from demandnet.schedule import build_scheduler


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """Command line: ``--config PATH`` followed by ``key=value`` overrides."""
    parser = argparse.ArgumentParser(description="demandnet data-parallel training")
    parser.add_argument("--config", required=True, help="YAML run configuration")
    parser.add_argument("overrides", nargs="*", help="dotted.key=value overrides")
    return parser.parse_args(argv)


class Run:
    """The prepared model, optimizer, loader and schedule of one training run."""

    def __init__(self, cfg: Config) -> None:
        train_cfg = cfg["train"]
        self.cfg = cfg
        self.accelerator = Accelerator(
            cpu=not torch.cuda.is_available(),
            gradient_accumulation_steps=int(train_cfg["gradient_accumulation_steps"]),
        )
        model = build_model(cfg["model"])
        optimizer = torch.optim.SGD(model.parameters(), lr=float(train_cfg["lr"]),
                                    momentum=float(train_cfg["momentum"]))
        loader = make_loader(cfg["data"]["path"], int(cfg["data"]["per_device_batch_size"]))
        self.loader: DataLoader = self.accelerator.prepare(loader)
        # one optimizer update per `gradient_accumulation_steps` batches of this process's shard
        self.updates_per_epoch = math.ceil(len(self.loader) / self.accelerator.gradient_accumulation_steps)
        self.total_updates = self.updates_per_epoch * int(train_cfg["epochs"])
        scheduler = build_scheduler(train_cfg, optimizer, self.total_updates)
        self.model, self.optimizer, self.scheduler = self.accelerator.prepare(model, optimizer, scheduler)


def train(run: Run, log: IO[str] | None) -> None:
    """``train.epochs`` passes over the data; the main process logs one record per update."""
    acc, cfg = run.accelerator, run.cfg
    update = 0
    losses: list[torch.Tensor] = []
    start = time.perf_counter()
    for epoch in range(int(cfg["train"]["epochs"])):
        run.model.train()
        for xb, yb in run.loader:
            with acc.accumulate(run.model):
                loss = torch.nn.functional.mse_loss(run.model(xb), yb)
                acc.backward(loss)
                losses.append(loss.detach())
                if acc.sync_gradients:
                    # one collective per update: the mean over processes of each process's mean
                    mean_loss = acc.reduce(torch.stack(losses).mean(), reduction="mean").item()
                    record = {"update": update, "epoch": epoch, "lr": run.optimizer.param_groups[0]["lr"],
                              "loss": mean_loss, "step_time_s": time.perf_counter() - start,
                              "wall_time": time.time()}
                run.optimizer.step()
                run.scheduler.step()
                run.optimizer.zero_grad()
            if acc.sync_gradients:
                if log is not None:
                    log.write(json.dumps(record) + "\n")
                    log.flush()
                    if update % int(cfg["train"]["log_interval"]) == 0 or update == run.total_updates - 1:
                        print(f"update {update:4d}  epoch {epoch}  lr {record['lr']:.6f}  "
                              f"loss {record['loss']:.6f}", flush=True)
                update, losses = update + 1, []
                start = time.perf_counter()


def save(run: Run, run_dir: Path) -> None:
    """The unwrapped model's state dict, from the main process."""
    run.accelerator.wait_for_everyone()
    if run.accelerator.is_main_process:
        state = {k: v.detach().cpu() for k, v in run.accelerator.unwrap_model(run.model).state_dict().items()}
        (run_dir / "final").mkdir(parents=True, exist_ok=True)
        torch.save(state, run_dir / "final" / "model.pt")
    run.accelerator.wait_for_everyone()


def main(argv: list[str] | None = None) -> None:
    """Train with the given config and save the final model."""
    args = parse_args(argv)
    cfg = load_config(args.config, args.overrides)
    run = Run(cfg)
    run_dir = Path(cfg["output_dir"]) / cfg["run_name"]
    log: IO[str] | None = None
    if run.accelerator.is_main_process:
        run_dir.mkdir(parents=True, exist_ok=True)
        (run_dir / "config.yaml").write_text(yaml.safe_dump(cfg, sort_keys=False), encoding="utf-8")
        log = open(run_dir / "metrics.jsonl", "w", encoding="utf-8")
        print(f"{run.accelerator.num_processes} processes, {run.updates_per_epoch} updates per epoch, "
              f"{run.total_updates} updates", flush=True)
    try:
        train(run, log)
    finally:
        if log is not None:
            log.close()
    save(run, run_dir)
    # torch 2.13's gloo can abort in static destructors at interpreter exit: leave directly
    if dist.is_initialized():
        dist.destroy_process_group()
    os._exit(0)


if __name__ == "__main__":
    main()
