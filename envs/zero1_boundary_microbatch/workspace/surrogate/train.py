"""Train the surrogate data-parallel with DeepSpeed; the entry point of every rank.

    torchrun --standalone --nproc_per_node=2 -m surrogate.train --config configs/dp2.yaml [section.field=value ...]

Outputs, under ``<output_dir>/<run_name>/``: ``config.yaml`` (the resolved options),
``metrics.jsonl`` (rank 0, one record per optimizer step) and ``final/model.pt`` (the fp32
master weights after the last step, gathered from every rank's partition).
"""
from __future__ import annotations

import argparse
import json
import time
from typing import Any

import torch
import torch.distributed as dist
import torch.nn.functional as F
from deepspeed.utils import safe_get_full_fp32_param

from surrogate import cluster
from surrogate import engine as team_engine
from surrogate.data import RankSlice, read_table
from surrogate.model import Surrogate, load_weights
from surrogate.options import Options, load_options


def deepspeed_config(options: Options, world_size: int) -> dict[str, Any]:
    """The DeepSpeed engine settings for these options and this many ranks.

    ``precision.bf16`` trains a bf16 model on fp32 master weights; with fp32 gradient
    accumulation at ZeRO stage 1, DeepSpeed runs it through its BF16 optimizer.
    """
    split = options.data
    return {
        "train_micro_batch_size_per_gpu": split.micro_batch_size,
        "gradient_accumulation_steps": split.gradient_accumulation_steps,
        "train_batch_size": split.micro_batch_size * split.gradient_accumulation_steps * world_size,
        "bf16": {"enabled": options.precision.bf16},
        "data_types": {"grad_accum_dtype": options.precision.grad_accum_dtype},
        "zero_optimization": {"stage": options.deepspeed.zero_stage},
        "gradient_clipping": options.deepspeed.gradient_clipping,
        # DeepSpeed lists no ZeRO test for plain SGD; it is the optimizer the README specifies
        "zero_allow_untested_optimizer": True,
        "steps_per_print": 10**9,
    }


def compute_dtype(options: Options) -> torch.dtype:
    return torch.bfloat16 if options.precision.bf16 else torch.float32


def build_engine(options: Options) -> team_engine.ReduceTimedEngine:
    """The model from the initial checkpoint, in our DeepSpeed engine, with SGD."""
    model = Surrogate(options.model)
    load_weights(model, options.model.init_checkpoint)
    model.to(device=cluster.device(), dtype=compute_dtype(options))
    sgd = torch.optim.SGD(model.parameters(), lr=options.train.lr)
    return team_engine.initialize(model, sgd, deepspeed_config(options, dist.get_world_size()))


def run_steps(engine: team_engine.ReduceTimedEngine, options: Options) -> None:
    """Every optimizer step of the run; rank 0 logs one metrics record per step."""
    features, targets = read_table(options.data.path)
    where = RankSlice(features, targets, options.data.micro_batch_size, options.data.gradient_accumulation_steps,
                      dist.get_rank(), dist.get_world_size())
    dev, dtype = cluster.device(), compute_dtype(options)
    for step in range(options.train.steps):
        began = time.perf_counter()
        shard_losses = []
        for xb, yb in where.micro_batches(step):
            # the model computes in its own dtype; the loss is taken in fp32
            loss = F.mse_loss(engine(xb.to(dev, dtype)).float(), yb.to(dev))
            engine.backward(loss)
            engine.step()  # the update happens at the step's last micro-batch
            shard_losses.append(loss.item())
        log_step(options, {
            "step": step,
            "loss": sum(shard_losses) / len(shard_losses),  # rank 0's slice only
            "lr": engine.get_lr()[0],
            "reduce_ms": 1000 * engine.take_reduce_seconds(),
            "step_time_s": time.perf_counter() - began,
            "wall_time": time.time(),
        })


def log_step(options: Options, record: dict[str, Any]) -> None:
    """Append the step's record to ``metrics.jsonl`` (rank 0) and print every ``log_interval``."""
    if dist.get_rank() != 0:
        return
    with (options.run_dir / "metrics.jsonl").open("a", encoding="utf-8") as log:
        log.write(json.dumps(record) + "\n")
    step = record["step"]
    if step % options.train.log_interval == 0 or step == options.train.steps - 1:
        print(f"step {step:4d}  loss {record['loss']:.6f}  reduce {record['reduce_ms']:.2f} ms", flush=True)


def gather_masters(engine: team_engine.ReduceTimedEngine) -> dict[str, torch.Tensor]:
    """The full fp32 master weights; a collective (every rank takes part)."""
    return {name: safe_get_full_fp32_param(param).detach().float().cpu().clone()
            for name, param in engine.module.named_parameters()}


def main() -> None:
    parser = argparse.ArgumentParser(description="data-parallel training of the surrogate network")
    parser.add_argument("--config", required=True, help="YAML options file")
    parser.add_argument("overrides", nargs="*", help="section.field=value")
    args = parser.parse_args()
    options = load_options(args.config, args.overrides)
    cluster.join()
    if dist.get_rank() == 0:
        options.run_dir.mkdir(parents=True, exist_ok=True)
        (options.run_dir / "config.yaml").write_text(options.to_yaml(), encoding="utf-8")
        (options.run_dir / "metrics.jsonl").write_text("", encoding="utf-8")
    engine = build_engine(options)
    run_steps(engine, options)
    masters = gather_masters(engine)
    if dist.get_rank() == 0:
        (options.run_dir / "final").mkdir(parents=True, exist_ok=True)
        torch.save(masters, options.run_dir / "final" / "model.pt")
    cluster.leave()


if __name__ == "__main__":
    main()
