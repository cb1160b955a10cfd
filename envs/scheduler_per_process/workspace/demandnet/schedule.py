"""Learning-rate schedules: any ``transformers.get_scheduler`` schedule with linear warmup."""
from __future__ import annotations

from typing import Any

import torch
from transformers import get_scheduler


def build_scheduler(train_cfg: dict[str, Any], optimizer: torch.optim.Optimizer,
                    num_training_steps: int) -> torch.optim.lr_scheduler.LRScheduler:
    """The ``train.lr_scheduler_type`` schedule over ``num_training_steps`` optimizer updates,
    warming up over ``train.warmup_steps`` of them."""
    return get_scheduler(
        train_cfg["lr_scheduler_type"],
        optimizer,
        num_warmup_steps=int(train_cfg["warmup_steps"]),
        num_training_steps=num_training_steps,
        scheduler_specific_kwargs=dict(train_cfg.get("scheduler_kwargs") or {}),
    )
