"""Data-parallel training entry point (one process per rank).

    torchrun --standalone --nproc_per_node=2 -m gaitnet.train --config configs/ddp.yaml [key=value ...]

Writes, under ``<output_dir>/<run_name>/``:
  * ``config.yaml``            the resolved configuration;
  * ``metrics.jsonl``          one JSON record per optimizer step (rank 0);
  * ``checkpoints/final.pt``   the model's state dict after the last step (rank 0).
"""
from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import IO, Any

import torch
import torch.distributed as dist
import yaml
from torch.nn.parallel import DistributedDataParallel

from gaitnet import distributed
from gaitnet.config import Config, load_config
from gaitnet.data import load_dataset, local_batches
from gaitnet.losses import classification_loss, view_consistency
from gaitnet.model import build_model, load_checkpoint, unwrap


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """Command line: ``--config PATH`` followed by ``key=value`` overrides."""
    parser = argparse.ArgumentParser(description="gaitnet data-parallel training")
    parser.add_argument("--config", required=True, help="YAML run configuration")
    parser.add_argument("overrides", nargs="*", help="dotted.key=value overrides")
    return parser.parse_args(argv)


def build(cfg: Config) -> tuple[DistributedDataParallel, torch.optim.Optimizer]:
    """The model from the initial checkpoint, wrapped for data parallelism, and its SGD."""
    model = build_model(cfg["model"])
    load_checkpoint(model, cfg["model"]["init_checkpoint"])
    dev = distributed.device()
    model.to(dev)
    ddp = DistributedDataParallel(model, device_ids=[dev.index] if dev.type == "cuda" else None)
    optimizer = torch.optim.SGD(ddp.parameters(), lr=float(cfg["train"]["lr"]))
    return ddp, optimizer


def train(ddp: DistributedDataParallel, optimizer: torch.optim.Optimizer, cfg: Config,
          log: IO[str] | None) -> None:
    """Run ``train.steps`` SGD steps; rank 0 appends one metrics record per step."""
    data = load_dataset(cfg["data"]["path"])
    dev = distributed.device()
    steps = int(cfg["train"]["steps"])
    weight = float(cfg["train"]["consistency_weight"])
    rank, world = dist.get_rank(), dist.get_world_size()
    batches = local_batches(data, int(cfg["data"]["global_batch_size"]), rank, world, steps)
    for step, (x, x_view, y) in enumerate(batches):
        start = time.perf_counter()
        x, x_view, y = x.to(dev), x_view.to(dev), y.to(dev)
        loss = classification_loss(ddp(x), y)
        loss.backward()
        consistency = torch.zeros((), device=dev)
        if weight > 0:
            # The consistency term is back-propagated on its own once the classifier's graph
            # has been freed (peak memory on the GPU nodes). DDP only exposes forward(), so
            # embed() is called on the wrapped model.
            consistency = view_consistency(unwrap(ddp), x, x_view)
            (weight * consistency).backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        record: dict[str, Any] = {
            "step": step,
            "loss": loss.item(),
            "consistency": consistency.item(),
            "lr": optimizer.param_groups[0]["lr"],
            "step_time_s": time.perf_counter() - start,
            "wall_time": time.time(),
        }
        if log is not None:
            log.write(json.dumps(record) + "\n")
            log.flush()
            if step % int(cfg["train"]["log_interval"]) == 0 or step == steps - 1:
                print(f"step {step:4d}  loss {record['loss']:.6f}  consistency {record['consistency']:.6f}",
                      flush=True)


def main(argv: list[str] | None = None) -> None:
    """Train with the given config and save the final model."""
    args = parse_args(argv)
    cfg = load_config(args.config, args.overrides)
    distributed.init()
    run_dir = Path(cfg["output_dir"]) / cfg["run_name"]
    is_rank0 = dist.get_rank() == 0
    if is_rank0:
        (run_dir / "checkpoints").mkdir(parents=True, exist_ok=True)
        (run_dir / "config.yaml").write_text(yaml.safe_dump(cfg, sort_keys=False), encoding="utf-8")
    ddp, optimizer = build(cfg)
    log = open(run_dir / "metrics.jsonl", "w", encoding="utf-8") if is_rank0 else None
    try:
        train(ddp, optimizer, cfg, log)
    finally:
        if log is not None:
            log.close()
    if is_rank0:
        torch.save(unwrap(ddp).state_dict(), run_dir / "checkpoints" / "final.pt")
    distributed.shutdown()


if __name__ == "__main__":
    main()
