"""Optimizer construction: two parameter groups, decay on matrices, none on norms and biases."""
from __future__ import annotations

import torch
from torch import nn

FROZEN_IN_BLOCKS_MODE = ("stem.", "norm.", "head.")


def apply_trainable(model: nn.Module, trainable: str) -> None:
    if trainable not in ("all", "blocks"):
        raise SystemExit(f"finetune.trainable={trainable!r}: 'all' or 'blocks'")
    for name, param in model.named_parameters():
        param.requires_grad_(trainable == "all" or not name.startswith(FROZEN_IN_BLOCKS_MODE))


def param_groups(model: nn.Module, weight_decay: float) -> list[dict]:
    decay, plain = [], []
    for _, param in model.named_parameters():
        if param.requires_grad:
            (decay if param.ndim >= 2 else plain).append(param)
    return [{"params": decay, "weight_decay": weight_decay}, {"params": plain, "weight_decay": 0.0}]


def build_optimizer(model: nn.Module, cfg) -> torch.optim.Optimizer:
    groups = param_groups(model, cfg.weight_decay)
    if cfg.name == "adamw":
        return torch.optim.AdamW(groups, lr=cfg.lr, betas=tuple(cfg.betas), eps=cfg.eps)
    if cfg.name == "sgd":
        return torch.optim.SGD(groups, lr=cfg.lr, momentum=cfg.momentum)
    raise SystemExit(f"optim.name={cfg.name!r}: 'adamw' or 'sgd'")
