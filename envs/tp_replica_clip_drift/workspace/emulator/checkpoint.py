"""Consolidated (tensor-parallel-independent) checkpoints.

A *consolidated* checkpoint is a ``torch.save``d dict mapping every parameter name of the
TP=1 model to its full tensor. Runs start from one, so every tensor-parallel size starts
from identical weights. DeepSpeed saves one ``mp_rank_XX_model_states.pt`` per
tensor-parallel rank; ``consolidate`` merges those back into the consolidated form.
"""
from __future__ import annotations

from pathlib import Path

import torch
from torch import nn

from emulator import layout

STATE_FILE = "mp_rank_{rank:02d}_model_states.pt"


@torch.no_grad()
def load_consolidated(model: nn.Module, path: str | Path, rank: int, size: int) -> None:
    """Copy this rank's slice of every parameter from a consolidated checkpoint."""
    full = torch.load(path, map_location="cpu", weights_only=True)
    names = {name for name, _ in model.named_parameters()}
    missing, unexpected = names - full.keys(), full.keys() - names
    if missing or unexpected:
        raise KeyError(f"{path}: missing={sorted(missing)} unexpected={sorted(unexpected)}")
    for name, param in model.named_parameters():
        part = layout.shard(name, full[name], rank, size)
        if part.shape != param.shape:
            raise ValueError(f"{name}: checkpoint slice {tuple(part.shape)} "
                             f"!= parameter {tuple(param.shape)}")
        param.copy_(part)


def rank_files(ckpt_dir: str | Path) -> list[Path]:
    """The per-rank model-state files of a DeepSpeed checkpoint tag directory, in rank order."""
    files = sorted(Path(ckpt_dir).glob("mp_rank_*_model_states.pt"))
    if not files:
        raise FileNotFoundError(f"no mp_rank_*_model_states.pt in {ckpt_dir}")
    return files


def read_rank_states(ckpt_dir: str | Path) -> list[dict[str, torch.Tensor]]:
    """Parameter tensors saved by each tensor-parallel rank."""
    states = []
    for path in rank_files(ckpt_dir):
        blob = torch.load(path, map_location="cpu", weights_only=True)
        states.append({k: v for k, v in blob["module"].items() if isinstance(v, torch.Tensor)})
    return states


def consolidate(ckpt_dir: str | Path) -> dict[str, torch.Tensor]:
    """Merge the per-rank states of a DeepSpeed checkpoint into a consolidated state dict."""
    states = read_rank_states(ckpt_dir)
    return {name: layout.merge(name, [s[name] for s in states]) for name in states[0]}
