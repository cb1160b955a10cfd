"""Tensor-parallel training entry point (one process per tensor-parallel rank).

    torchrun --standalone --nproc_per_node=2 -m emulator.train --config configs/tp2.yaml [key=value ...]

Writes, under ``<output_dir>/<run_name>/``:
  * ``config.yaml``        the resolved configuration;
  * ``metrics.jsonl``      one JSON record per optimizer step (rank 0);
  * ``checkpoints/final/`` the DeepSpeed checkpoint after the last step.
"""
from __future__ import annotations

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

from emulator import optim, parallel
from emulator.checkpoint import load_consolidated
from emulator.config import Config, load_config
from emulator.data import batches, load_dataset
from emulator.model import build_model


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """Command line: ``--config PATH`` followed by ``key=value`` overrides."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", required=True, help="YAML run configuration")
    parser.add_argument("overrides", nargs="*", help="dotted.key=value overrides")
    return parser.parse_args(argv)


def deepspeed_config(cfg: Config) -> dict[str, Any]:
    """DeepSpeed engine settings derived from the run config (no accumulation).

    With ``deepspeed.bf16`` the model trains in bf16 with fp32 master weights and fp32
    gradient accumulation, which DeepSpeed runs through its BF16 optimizer (ZeRO stage 1).
    """
    bf16 = bool(cfg["deepspeed"]["bf16"])
    return {
        "train_micro_batch_size_per_gpu": cfg["data"]["batch_size"],
        "gradient_accumulation_steps": 1,
        "gradient_clipping": float(cfg["deepspeed"]["gradient_clipping"]),
        "bf16": {"enabled": bf16},
        "data_types": {"grad_accum_dtype": "fp32"} if bf16 else {},
        "zero_optimization": {"stage": cfg["deepspeed"]["zero_stage"]},
        # plain SGD is not on DeepSpeed's list of ZeRO-tested optimizers
        "zero_allow_untested_optimizer": True,
        "steps_per_print": 10**9,
    }


def model_dtype(cfg: Config) -> torch.dtype:
    """The dtype the model computes in."""
    return torch.bfloat16 if cfg["deepspeed"]["bf16"] else torch.float32


def build_engine(cfg: Config) -> deepspeed.DeepSpeedEngine:
    """Model loaded from the consolidated checkpoint, wrapped in a DeepSpeed engine with SGD."""
    model = build_model(cfg["model"], parallel.tp_size())
    load_consolidated(model, cfg["model"]["init_checkpoint"], parallel.tp_rank(), parallel.tp_size())
    model.to(device=parallel.device(), dtype=model_dtype(cfg))
    optim.install()
    optimizer = torch.optim.SGD(model.parameters(), lr=float(cfg["train"]["lr"]))
    engine, _, _, _ = deepspeed.initialize(
        model=model, optimizer=optimizer, config=deepspeed_config(cfg), mpu=parallel.MegatronMPU
    )
    return engine


def as_float(value: Any) -> float | None:
    """A Python float from a tensor or number; None stays None."""
    if value is None:
        return None
    return float(value.item() if isinstance(value, torch.Tensor) else value)


def train(engine: deepspeed.DeepSpeedEngine, cfg: Config, log: IO[str] | None) -> None:
    """Run ``train.steps`` SGD steps; rank 0 appends one metrics record per step."""
    x, y = load_dataset(cfg["data"]["path"])
    dev, dtype = parallel.device(), model_dtype(cfg)
    steps = cfg["train"]["steps"]
    for step, (xb, yb) in enumerate(batches(x, y, cfg["data"]["batch_size"], steps)):
        start = time.perf_counter()
        # inputs in the model's dtype; the loss is computed in fp32
        loss = F.mse_loss(engine(xb.to(dev, dtype)).float(), yb.to(dev))
        engine.backward(loss)
        engine.step()
        record = {
            "step": step,
            "loss": loss.item(),
            "grad_norm": as_float(engine.get_global_grad_norm()),
            "lr": engine.get_lr()[0],
            "step_time_s": time.perf_counter() - start,
            "wall_time": time.time(),
        }
        if log is not None:
            log.write(json.dumps(record) + "\n")
            log.flush()
            if step % cfg["train"]["log_interval"] == 0 or step == steps - 1:
                print(f"step {step:4d}  loss {record['loss']:.6f}  "
                      f"grad_norm {record['grad_norm']}", flush=True)


def main(argv: list[str] | None = None) -> None:
    """Train with the given config and save the final checkpoint."""
    args = parse_args(argv)
    cfg = load_config(args.config, args.overrides)
    parallel.init_distributed(cfg["parallel"]["tensor_model_parallel_size"])
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
    engine.save_checkpoint(str(run_dir / "checkpoints"), tag="final")
    parallel.shutdown()


if __name__ == "__main__":
    main()
