"""Entry point: ``torchrun --nproc_per_node N -m sft.train --config FILE [key=value ...]``."""

from __future__ import annotations

import os
from typing import Any

import torch
import torch.distributed as dist
from transformers import TrainingArguments, set_seed

from sft.config import parse_args
from sft.data import SFTDataset, collate
from sft.modeling import build_model
from sft.trainer import SFTTrainer


def training_arguments(section: dict[str, Any]) -> TrainingArguments:
    """TrainingArguments from the ``training`` section of the run configuration."""
    backend = os.environ.get("TRAINFAIL_BACKEND", "gloo")
    return TrainingArguments(
        **section,
        ddp_backend=backend,
        use_cpu=not torch.cuda.is_available(),
    )


def shutdown() -> None:
    """Leave the process group only once every rank has finished writing."""
    if dist.is_available() and dist.is_initialized():
        dist.barrier()
        dist.destroy_process_group()


def main(argv: list[str] | None = None) -> None:
    """Fine-tune the model described by the run configuration."""
    config = parse_args(argv)
    args = training_arguments(config["training"])
    # Seed before building the model so every rank starts from the same weights.
    set_seed(args.seed)
    model = build_model(config["model"]["config"])
    dataset = SFTDataset(config["data"]["train_file"], config["data"]["max_length"])
    trainer = SFTTrainer(model=model, args=args, train_dataset=dataset, data_collator=collate)
    result = trainer.train()
    trainer.log_metrics("train", result.metrics)
    trainer.save_model()
    shutdown()


if __name__ == "__main__":
    main()
