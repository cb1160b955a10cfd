"""Pretraining entry point, one process per tensor-parallel rank.

    torchrun --standalone --nproc_per_node=2 -m emulator.train --config configs/tp2.yaml [key=value ...]

Outputs under ``<output_dir>/<run_name>/``: ``config.yaml`` (the resolved run file),
``metrics.jsonl`` (rank 0, one record per iteration) and the DeepSpeed checkpoint
``checkpoints/final/``.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import time
from pathlib import Path
from typing import Any, TextIO

import deepspeed
import torch
import torch.nn.functional as F
import yaml

from emulator import mpu, optim
from emulator.arguments import get_args, parse_args, run_file_view, set_args
from emulator.checkpointing import load_consolidated_checkpoint
from emulator.initialize import finalize, initialize_megatron
from emulator.model import model_provider
from emulator.training_data import train_data_iterator


def get_deepspeed_config(args: argparse.Namespace) -> dict[str, Any]:
    """The engine's config. With ``args.bf16`` DeepSpeed computes in bf16 with fp32 masters
    and fp32 gradient accumulation (its BF16 optimizer at ZeRO stage 1)."""
    config: dict[str, Any] = {
        "train_micro_batch_size_per_gpu": args.micro_batch_size,
        "gradient_accumulation_steps": 1,
        "gradient_clipping": float(args.clip_grad),
        "bf16": {"enabled": bool(args.bf16)},
        "zero_optimization": {"stage": args.zero_stage},
        "zero_allow_untested_optimizer": True,  # SGD is not on ZeRO's list
        "steps_per_print": 10**9,
    }
    if args.bf16:
        config["data_types"] = {"grad_accum_dtype": "fp32"}
    return config


def setup_model_and_optimizer(args: argparse.Namespace) -> deepspeed.DeepSpeedEngine:
    """The model (loaded from the consolidated checkpoint, in the training dtype) inside a
    DeepSpeed engine, with SGD."""
    model = model_provider(args)
    load_consolidated_checkpoint(model, args)
    model.to(device=args.device, dtype=args.params_dtype)
    optim.install()
    sgd = torch.optim.SGD(model.parameters(), lr=float(args.lr))
    engine, _, _, _ = deepspeed.initialize(model=model, optimizer=sgd, config=get_deepspeed_config(args), mpu=mpu)
    return engine


def train_step(engine: deepspeed.DeepSpeedEngine, features: torch.Tensor, targets: torch.Tensor) -> float:
    """One iteration; the loss is the fp32 mean squared error of the model's output."""
    args = get_args()
    output = engine(features.to(args.device, args.params_dtype))
    loss = F.mse_loss(output.float(), targets.to(args.device))
    engine.backward(loss)
    engine.step()
    return loss.item()


def training_log(iteration: int, record: dict[str, Any], log: TextIO) -> None:
    args = get_args()
    log.write(json.dumps(record) + "\n")
    log.flush()
    if iteration % args.log_interval == 0 or iteration == args.train_iters - 1:
        print(f"step {iteration:4d}  loss {record['loss']:.6f}  grad_norm {record['grad_norm']}", flush=True)


def pretrain(engine: deepspeed.DeepSpeedEngine, log: TextIO | None) -> None:
    for iteration, (features, targets) in enumerate(train_data_iterator(get_args())):
        started = time.perf_counter()
        loss = train_step(engine, features, targets)
        norm = engine.get_global_grad_norm()
        record = {
            "step": iteration,
            "loss": loss,
            "grad_norm": None if norm is None else float(norm),
            "lr": engine.get_lr()[0],
            "step_time_s": time.perf_counter() - started,
            "wall_time": time.time(),
        }
        if log is not None:
            training_log(iteration, record, log)


def main() -> None:
    args = parse_args(__doc__.splitlines()[0])
    args.params_dtype = torch.bfloat16 if args.bf16 else torch.float32
    set_args(args)
    initialize_megatron(args)
    save = Path(args.output_dir) / args.run_name
    if args.rank == 0:
        save.mkdir(parents=True, exist_ok=True)
        (save / "config.yaml").write_text(yaml.safe_dump(run_file_view(args), sort_keys=False), encoding="utf-8")
    engine = setup_model_and_optimizer(args)
    with contextlib.ExitStack() as files:
        log = files.enter_context(open(save / "metrics.jsonl", "w", encoding="utf-8")) if args.rank == 0 else None
        pretrain(engine, log)
    engine.save_checkpoint(str(save / "checkpoints"), tag="final")
    finalize()


if __name__ == "__main__":
    main()
