"""Data-parallel training entry point: one process per rank, started by torchrun.

    torchrun --standalone --nproc_per_node=2 -m gaitnet.train --config configs/ddp.yaml [name=value ...]

The number of ranks is the process group's: however many processes torchrun started.
Outputs go to ``<output_dir>/<run_name>/``: ``config.yaml`` (the resolved settings),
``metrics.jsonl`` (one record per optimizer step) and ``checkpoints/final.pt`` (the model after
the last step), all from rank 0.
"""
from __future__ import annotations

import contextlib
import json
import sys
import time
from pathlib import Path
from typing import IO, Any

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

from gaitnet import distributed
from gaitnet.data import load_dataset, local_batches
from gaitnet.losses import classification_loss, view_consistency
from gaitnet.model import ActivityNet, load_checkpoint, unwrap
from gaitnet.settings import Settings, read_settings


def build(settings: Settings) -> tuple[DistributedDataParallel, torch.optim.Optimizer]:
    """The model from the initial checkpoint, wrapped for data parallelism, and its SGD."""
    model = ActivityNet.from_settings(settings)
    load_checkpoint(model, settings["model.init_checkpoint"])
    here = distributed.device()
    ddp = DistributedDataParallel(model.to(here), device_ids=[here.index] if here.type == "cuda" else None)
    return ddp, torch.optim.SGD(ddp.parameters(), lr=settings["train.lr"])


def train(ddp: DistributedDataParallel, optimizer: torch.optim.Optimizer, settings: Settings,
          metrics: IO[str] | None) -> None:
    """``train.steps`` SGD steps; with ``metrics`` (rank 0) one JSON record per step."""
    dev = distributed.device()
    weight = settings["train.consistency_weight"]
    steps = settings["train.steps"]
    batches = local_batches(load_dataset(settings["data.path"]), settings["data.global_batch_size"],
                            dist.get_rank(), dist.get_world_size(), steps)
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
        if metrics is None:
            continue
        record: dict[str, Any] = {"step": step, "loss": loss.item(), "consistency": consistency.item(),
                                  "lr": optimizer.param_groups[0]["lr"],
                                  "step_time_s": time.perf_counter() - start, "wall_time": time.time()}
        metrics.write(json.dumps(record) + "\n")
        metrics.flush()
        if step % settings["train.log_interval"] == 0 or step == steps - 1:
            print(f"step {step:4d}  loss {record['loss']:.6f}  consistency {record['consistency']:.6f}", flush=True)


def main(argv: list[str] | None = None) -> None:
    """``--config CONFIG [name=value ...]``: train, then save the final model."""
    words = sys.argv[1:] if argv is None else list(argv)
    if len(words) < 2 or words[0] != "--config":
        raise SystemExit("usage: torchrun ... -m gaitnet.train --config CONFIG [name=value ...]")
    settings = read_settings(words[1], words[2:])
    distributed.init()
    out = Path(settings["output_dir"]) / settings["run_name"]
    leader = dist.get_rank() == 0
    if leader:
        (out / "checkpoints").mkdir(parents=True, exist_ok=True)
        (out / "config.yaml").write_text(settings.as_yaml(), encoding="utf-8")
    ddp, optimizer = build(settings)
    with contextlib.ExitStack() as closing:
        metrics = closing.enter_context(open(out / "metrics.jsonl", "w", encoding="utf-8")) if leader else None
        train(ddp, optimizer, settings, metrics)
    if leader:
        torch.save(unwrap(ddp).state_dict(), out / "checkpoints" / "final.pt")
    distributed.shutdown()


if __name__ == "__main__":
    main()
