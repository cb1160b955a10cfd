"""Expert-parallel training entry point (one process per rank).

    torchrun --standalone --nproc_per_node=2 -m moetrain.train --config configs/ep2.yaml [key=value ...]

The number of ranks ``W`` is the process group's: as many as ``torchrun`` started. Writes, under
``<output_dir>/<run_name>/``:
  * ``config.yaml``             the resolved settings (rank 0);
  * ``metrics.jsonl``           one JSON record per optimizer step (rank 0);
  * ``checkpoints/final/rankR.pt``  rank R's parameters after the last step (consolidated layout,
    its own experts only).
"""

import argparse
import json
import time
from pathlib import Path
from typing import IO, Any

import deepspeed
import torch
import torch.distributed as dist
import torch.nn.functional as F
import yaml
from deepspeed.moe.utils import split_params_into_different_moe_groups_for_optimizer

from moetrain import parallel, reduction
from moetrain.checkpoint import load_consolidated, rank_state
from moetrain.config import Settings, read
from moetrain.data import load_dataset, local_batch
from moetrain.model import Surrogate, build_model


def deepspeed_config(settings: Settings, world: int) -> dict[str, Any]:
    """DeepSpeed engine settings for ``world`` ranks (fp32, no accumulation)."""
    return {
        "train_micro_batch_size_per_gpu": settings["data.global_batch_size"] // world,
        "gradient_accumulation_steps": 1,
        "zero_optimization": {"stage": settings["deepspeed.zero_stage"]},
        # plain SGD is not on DeepSpeed's list of ZeRO-tested optimizers
        "zero_allow_untested_optimizer": True,
        "steps_per_print": 10**9,
    }


def build_engine(settings: Settings, ep_size: int) -> tuple[deepspeed.DeepSpeedEngine, Surrogate]:
    """Model with this rank's experts from the init checkpoint, in a DeepSpeed engine with SGD."""
    model = build_model(settings, ep_size)
    load_consolidated(model, settings["model.init_checkpoint"], parallel.expert_parallel_rank(ep_size))
    model.to(parallel.device())
    reduction.install()
    # expert parameters go to their own param groups (DeepSpeed reduces them over the
    # expert-data-parallel group)
    optimizer = torch.optim.SGD(
        split_params_into_different_moe_groups_for_optimizer({"params": list(model.parameters()), "name": "params"}),
        lr=settings["train.lr"], weight_decay=settings["train.weight_decay"])
    engine, _, _, _ = deepspeed.initialize(model=model, optimizer=optimizer,
                                           config=deepspeed_config(settings, dist.get_world_size()))
    return engine, model


class StepLog:
    """Rank 0's ``metrics.jsonl`` and console lines; a no-op on the other ranks."""

    def __init__(self, path: Path | None, every: int, last: int) -> None:
        self.sink: IO[str] | None = path.open("w", encoding="utf-8") if path is not None else None
        self.every, self.last = every, last

    def add(self, step: int, loss: float, mse: float, lr: float, started: float) -> None:
        if self.sink is None:
            return
        entry = dict(step=step, loss=loss, mse=mse, lr=lr, step_time_s=time.perf_counter() - started,
                     wall_time=time.time())
        self.sink.write(json.dumps(entry) + "\n")
        self.sink.flush()
        if step == self.last or step % self.every == 0:
            print(f"[step {step}] objective={loss:.6f} mse={mse:.6f}", flush=True)

    def close(self) -> None:
        if self.sink is not None:
            self.sink.close()


def train(engine: deepspeed.DeepSpeedEngine, settings: Settings, log: StepLog) -> None:
    """Run ``train.steps`` SGD steps; every step's objective is the mean of the ranks' losses."""
    x, y = load_dataset(settings["data.path"])
    rank, world, dev = dist.get_rank(), dist.get_world_size(), parallel.device()
    for step in range(settings["train.steps"]):
        started = time.perf_counter()
        xb, yb = local_batch(x, y, step, settings["data.global_batch_size"], rank, world)
        prediction, aux = engine(xb.to(dev))
        mse = F.mse_loss(prediction, yb.to(dev))
        loss = mse + settings["model.aux_loss_coef"] * aux
        engine.backward(loss)
        engine.step()
        both = torch.stack([loss.detach(), mse.detach()]).float().cpu()
        dist.all_reduce(both)
        mean_loss, mean_mse = (both / world).tolist()
        log.add(step, mean_loss, mean_mse, engine.get_lr()[0], started)


def main(argv: list[str] | None = None) -> None:
    """Train with the given config and save every rank's final parameters."""
    cli = argparse.ArgumentParser(description="expert-parallel training of the surrogate model")
    cli.add_argument("--config", required=True, help="YAML run configuration")
    cli.add_argument("overrides", nargs="*", help="dotted.key=value overrides")
    opts = cli.parse_args(argv)
    settings = read(opts.config, opts.overrides)
    ep_size = settings["parallel.expert_parallel_size"]
    parallel.init_distributed(ep_size)
    run_dir = Path(settings["output_dir"]) / settings["run_name"]
    final_dir = run_dir / "checkpoints" / "final"
    leader = dist.get_rank() == 0
    if leader:
        final_dir.mkdir(parents=True, exist_ok=True)
        (run_dir / "config.yaml").write_text(yaml.safe_dump(settings.tree, sort_keys=False), encoding="utf-8")
    engine, model = build_engine(settings, ep_size)
    log = StepLog(run_dir / "metrics.jsonl" if leader else None, settings["train.log_interval"],
                  settings["train.steps"] - 1)
    try:
        train(engine, settings, log)
    finally:
        log.close()
    dist.barrier()
    torch.save(rank_state(model, parallel.expert_parallel_rank(ep_size)), final_dir / f"rank{dist.get_rank()}.pt")
    parallel.shutdown()


if __name__ == "__main__":
    main()
