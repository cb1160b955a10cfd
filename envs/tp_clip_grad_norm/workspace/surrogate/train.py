"""Training entry point: one process per tensor-parallel rank.

    torchrun --standalone --nproc_per_node=2 -m surrogate.train --config configs/tp2.yaml [section.key=value ...]

Writes ``config.yaml``, ``metrics.jsonl`` (rank 0, one record per optimizer step) and the
DeepSpeed checkpoint ``checkpoints/final/`` under ``<output_dir>/<run_name>/``.
"""
from __future__ import annotations

import json
import time
from typing import Any, TextIO

import deepspeed
import torch
import torch.nn.functional as F

from surrogate import dist
from surrogate.ckpt import restore
from surrogate.config import RunSettings, as_yaml, settings_from_command_line
from surrogate.dataset import Table
from surrogate.model import build_model


def engine_config(settings: RunSettings) -> dict[str, Any]:
    """DeepSpeed settings: fp32, one micro-batch per step, the run's ZeRO stage and clipping."""
    return {
        "train_micro_batch_size_per_gpu": settings.data.batch_size,
        "gradient_accumulation_steps": 1,
        "gradient_clipping": settings.deepspeed.gradient_clipping,
        "zero_optimization": {"stage": settings.deepspeed.zero_stage},
        "zero_allow_untested_optimizer": True,  # plain SGD is not on ZeRO's tested list
        "steps_per_print": 10**9,
    }


class Trainer:
    """A DeepSpeed engine around this rank's part of the model, trained with plain SGD."""

    def __init__(self, settings: RunSettings, place: dist.Placement) -> None:
        self.settings, self.place = settings, place
        model = build_model(settings.model, place.tp_size)
        restore(model, settings.model.init_checkpoint, place.tp_rank, place.tp_size)
        model.to(place.device)
        sgd = torch.optim.SGD(model.parameters(), lr=settings.train.lr)
        self.engine, *_ = deepspeed.initialize(model=model, optimizer=sgd, config=engine_config(settings),
                                               mpu=dist.mpu())

    def step(self, x: torch.Tensor, y: torch.Tensor) -> dict[str, Any]:
        """Forward, backward and one optimizer step; the step's metrics record."""
        started = time.perf_counter()
        loss = F.mse_loss(self.engine(x.to(self.place.device)), y.to(self.place.device))
        self.engine.backward(loss)
        self.engine.step()
        norm = self.engine.get_global_grad_norm()
        return {
            "loss": loss.item(),
            "grad_norm": None if norm is None else float(norm),
            "lr": self.engine.get_lr()[0],
            "step_time_s": time.perf_counter() - started,
            "wall_time": time.time(),
        }

    def fit(self, table: Table, metrics: TextIO | None) -> None:
        """``train.steps`` steps; rank 0 logs every one to ``metrics`` and some to the console."""
        train = self.settings.train
        for step in range(train.steps):
            record = {"step": step, **self.step(*table.batch(step, self.settings.data.batch_size))}
            if metrics is None:
                continue
            metrics.write(json.dumps(record) + "\n")
            metrics.flush()
            if step % train.log_interval == 0 or step == train.steps - 1:
                print(f"step {step:4d}  loss {record['loss']:.6f}  grad_norm {record['grad_norm']}", flush=True)


def main() -> None:
    settings = settings_from_command_line("tensor-parallel training of the surrogate")
    place = dist.join(settings.parallel.tensor_model_parallel_size)
    run_dir = settings.run_dir
    if place.writes_logs:
        run_dir.mkdir(parents=True, exist_ok=True)
        (run_dir / "config.yaml").write_text(as_yaml(settings), encoding="utf-8")
    trainer = Trainer(settings, place)
    table = Table(settings.data.path)
    if place.writes_logs:
        with open(run_dir / "metrics.jsonl", "w", encoding="utf-8") as metrics:
            trainer.fit(table, metrics)
    else:
        trainer.fit(table, None)
    trainer.engine.save_checkpoint(str(run_dir / "checkpoints"), tag="final")
    dist.leave()


if __name__ == "__main__":
    main()
