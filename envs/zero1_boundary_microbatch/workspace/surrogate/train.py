"""Data-parallel training entry point (one process per rank).

    torchrun --standalone --nproc_per_node=2 -m surrogate.train --config configs/dp2.yaml [key=value ...]

Writes, under ``<output_dir>/<run_name>/``:
  * ``config.yaml``     the resolved configuration;
  * ``metrics.jsonl``   one JSON record per optimizer step (rank 0);
  * ``final/model.pt``  the fp32 master weights after the last step, as a full state dict.
"""
from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import IO, Any

import torch
import torch.distributed as dist
import torch.nn.functional as F
import yaml
from deepspeed.utils import safe_get_full_fp32_param

from surrogate import dist as ddist
from surrogate import engine as team_engine
from surrogate.config import Config, load_config
from surrogate.data import load_dataset, micro_batches
from surrogate.model import build_model, load_weights


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """Command line: ``--config PATH`` followed by ``key=value`` overrides."""
    parser = argparse.ArgumentParser(description="data-parallel training of the surrogate network")
    parser.add_argument("--config", required=True, help="YAML run configuration")
    parser.add_argument("overrides", nargs="*", help="dotted.key=value overrides")
    return parser.parse_args(argv)


def deepspeed_config(cfg: Config, world_size: int) -> dict[str, Any]:
    """DeepSpeed engine settings derived from the run config.

    With ``precision.bf16`` the model trains in bf16 with fp32 master weights; with
    ``grad_accum_dtype: fp32`` DeepSpeed runs this through its BF16 optimizer (ZeRO stage 1).
    """
    data, precision = cfg["data"], cfg["precision"]
    return {
        "train_micro_batch_size_per_gpu": data["micro_batch_size"],
        "gradient_accumulation_steps": data["gradient_accumulation_steps"],
        "train_batch_size": data["micro_batch_size"] * data["gradient_accumulation_steps"] * world_size,
        "bf16": {"enabled": bool(precision["bf16"])},
        "data_types": {"grad_accum_dtype": precision["grad_accum_dtype"]},
        "zero_optimization": {"stage": cfg["deepspeed"]["zero_stage"]},
        "gradient_clipping": float(cfg["deepspeed"]["gradient_clipping"]),
        # plain SGD is not on DeepSpeed's list of ZeRO-tested optimizers
        "zero_allow_untested_optimizer": True,
        "steps_per_print": 10**9,
    }


def model_dtype(cfg: Config) -> torch.dtype:
    """The dtype the model computes in."""
    return torch.bfloat16 if cfg["precision"]["bf16"] else torch.float32


def build_engine(cfg: Config) -> team_engine.ReduceTimedEngine:
    """Model loaded from the initial checkpoint, wrapped in our DeepSpeed engine with SGD."""
    model = build_model(cfg["model"])
    load_weights(model, cfg["model"]["init_checkpoint"])
    model.to(device=ddist.device(), dtype=model_dtype(cfg))
    optimizer = torch.optim.SGD(model.parameters(), lr=float(cfg["train"]["lr"]))
    return team_engine.initialize(model, optimizer, deepspeed_config(cfg, dist.get_world_size()))


def train(engine: team_engine.ReduceTimedEngine, cfg: Config, log: IO[str] | None) -> None:
    """Run ``train.steps`` optimizer steps; rank 0 appends one metrics record per step."""
    x, y = load_dataset(cfg["data"]["path"])
    dev, dtype = ddist.device(), model_dtype(cfg)
    rank, world = dist.get_rank(), dist.get_world_size()
    mbs, accumulation = cfg["data"]["micro_batch_size"], cfg["data"]["gradient_accumulation_steps"]
    steps = cfg["train"]["steps"]
    for step in range(steps):
        start = time.perf_counter()
        losses = []
        for xb, yb in micro_batches(x, y, step, mbs, accumulation, rank, world):
            # inputs in the model's dtype; the loss is computed in fp32
            loss = F.mse_loss(engine(xb.to(dev, dtype)).float(), yb.to(dev))
            engine.backward(loss)
            engine.step()  # applies the update at the last micro-batch of the step
            losses.append(loss.item())
        record = {
            "step": step,
            "loss": sum(losses) / len(losses),  # this rank's shard
            "lr": engine.get_lr()[0],
            "reduce_ms": 1000 * engine.take_reduce_seconds(),
            "step_time_s": time.perf_counter() - start,
            "wall_time": time.time(),
        }
        if log is not None:
            log.write(json.dumps(record) + "\n")
            log.flush()
            if step % cfg["train"]["log_interval"] == 0 or step == steps - 1:
                print(f"step {step:4d}  loss {record['loss']:.6f}  reduce {record['reduce_ms']:.2f} ms", flush=True)


def save_final(engine: team_engine.ReduceTimedEngine, path: Path, is_rank0: bool) -> None:
    """The full fp32 master weights (gathered from every rank's partition), saved by rank 0."""
    state = {}
    for name, param in engine.module.named_parameters():
        full = safe_get_full_fp32_param(param)  # collective: every rank takes part
        state[name] = full.detach().float().cpu().clone()
    if is_rank0:
        path.parent.mkdir(parents=True, exist_ok=True)
        torch.save(state, path)


def main(argv: list[str] | None = None) -> None:
    """Train with the given config and save the final weights."""
    args = parse_args(argv)
    cfg = load_config(args.config, args.overrides)
    ddist.init_distributed()
    if dist.get_world_size() != cfg["parallel"]["data_parallel_size"]:
        raise SystemExit(f"launched {dist.get_world_size()} ranks but parallel.data_parallel_size is "
                         f"{cfg['parallel']['data_parallel_size']}: launch with scripts/launch.sh")
    run_dir = Path(cfg["output_dir"]) / cfg["run_name"]
    is_rank0 = dist.get_rank() == 0
    if is_rank0:
        run_dir.mkdir(parents=True, exist_ok=True)
        (run_dir / "config.yaml").write_text(yaml.safe_dump(cfg, sort_keys=False), encoding="utf-8")
    engine = build_engine(cfg)
    log = open(run_dir / "metrics.jsonl", "w", encoding="utf-8") if is_rank0 else None
    try:
        train(engine, cfg, log)
    finally:
        if log is not None:
            log.close()
    save_final(engine, run_dir / "final" / "model.pt", is_rank0)
    ddist.shutdown()


if __name__ == "__main__":
    main()
