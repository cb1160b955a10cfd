"""Expert-parallel training entry point (one process per rank).

    torchrun --standalone --nproc_per_node=2 -m moetrain.train --config configs/ep2.yaml [key=value ...]

Writes, under ``<output_dir>/<run_name>/``:
  * ``config.yaml``             the resolved configuration (rank 0);
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
from moetrain.config import Config, load_config
from moetrain.data import load_dataset, local_batch
from moetrain.model import Surrogate, build_model


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """Command line: ``--config PATH`` followed by ``key=value`` overrides."""
    parser = argparse.ArgumentParser(description="expert-parallel training of the surrogate model")
    parser.add_argument("--config", required=True, help="YAML run configuration")
    parser.add_argument("overrides", nargs="*", help="dotted.key=value overrides")
    return parser.parse_args(argv)


def deepspeed_config(cfg: Config) -> dict[str, Any]:
    """DeepSpeed engine settings derived from the run config (fp32, no accumulation)."""
    world = int(cfg["parallel"]["world_size"])
    return {
        "train_micro_batch_size_per_gpu": int(cfg["data"]["global_batch_size"]) // world,
        "gradient_accumulation_steps": 1,
        "zero_optimization": {"stage": int(cfg["deepspeed"]["zero_stage"])},
        # plain SGD is not on DeepSpeed's list of ZeRO-tested optimizers
        "zero_allow_untested_optimizer": True,
        "steps_per_print": 10**9,
    }


def build_engine(cfg: Config, ep_size: int) -> tuple[deepspeed.DeepSpeedEngine, Surrogate]:
    """Model with this rank's experts from the init checkpoint, in a DeepSpeed engine with SGD."""
    model = build_model(cfg["model"], ep_size)
    load_consolidated(model, cfg["model"]["init_checkpoint"], parallel.expert_parallel_rank(ep_size))
    model.to(parallel.device())
    reduction.install()
    # expert parameters go to their own param groups (DeepSpeed reduces them over the
    # expert-data-parallel group)
    optimizer = torch.optim.SGD(
        split_params_into_different_moe_groups_for_optimizer({"params": list(model.parameters()), "name": "params"}),
        lr=float(cfg["train"]["lr"]), weight_decay=float(cfg["train"]["weight_decay"]))
    engine, _, _, _ = deepspeed.initialize(model=model, optimizer=optimizer, config=deepspeed_config(cfg))
    return engine, model


def train(engine: deepspeed.DeepSpeedEngine, cfg: Config, log: IO[str] | None) -> None:
    """Run ``train.steps`` SGD steps; rank 0 appends one metrics record per step."""
    x, y = load_dataset(cfg["data"]["path"])
    rank, world = dist.get_rank(), dist.get_world_size()
    dev, steps = parallel.device(), int(cfg["train"]["steps"])
    aux_coef = float(cfg["model"]["aux_loss_coef"])
    for step in range(steps):
        start = time.perf_counter()
        xb, yb = local_batch(x, y, step, int(cfg["data"]["global_batch_size"]), rank, world)
        pred, aux_loss = engine(xb.to(dev))
        mse = F.mse_loss(pred, yb.to(dev))
        loss = mse + aux_coef * aux_loss
        engine.backward(loss)
        engine.step()
        logged = torch.stack([loss.detach(), mse.detach()]).float().cpu()
        dist.all_reduce(logged)
        logged /= world
        record = {
            "step": step,
            "loss": logged[0].item(),
            "mse": logged[1].item(),
            "lr": engine.get_lr()[0],
            "step_time_s": time.perf_counter() - start,
            "wall_time": time.time(),
        }
        if log is not None:
            log.write(json.dumps(record) + "\n")
            log.flush()
            if step % int(cfg["train"]["log_interval"]) == 0 or step == steps - 1:
                print(f"step {step:4d}  loss {record['loss']:.6f}  mse {record['mse']:.6f}", flush=True)


def main(argv: list[str] | None = None) -> None:
    """Train with the given config and save every rank's final parameters."""
    args = parse_args(argv)
    cfg = load_config(args.config, args.overrides)
    ep_size = int(cfg["parallel"]["expert_parallel_size"])
    parallel.init_distributed(ep_size)
    if dist.get_world_size() != int(cfg["parallel"]["world_size"]):
        raise SystemExit(f"launched {dist.get_world_size()} ranks, config says "
                         f"parallel.world_size={cfg['parallel']['world_size']}")
    run_dir = Path(cfg["output_dir"]) / cfg["run_name"]
    is_rank0 = dist.get_rank() == 0
    if is_rank0:
        (run_dir / "checkpoints" / "final").mkdir(parents=True, exist_ok=True)
        (run_dir / "config.yaml").write_text(yaml.safe_dump(cfg, sort_keys=False), encoding="utf-8")
    engine, model = build_engine(cfg, ep_size)
    log = open(run_dir / "metrics.jsonl", "w", encoding="utf-8") if is_rank0 else None
    try:
        train(engine, cfg, log)
    finally:
        if log is not None:
            log.close()
    dist.barrier()
    torch.save(rank_state(model, parallel.expert_parallel_rank(ep_size)),
               run_dir / "checkpoints" / "final" / f"rank{dist.get_rank()}.pt")
    parallel.shutdown()


if __name__ == "__main__":
    main()
