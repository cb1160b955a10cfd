"""Loading the consolidated initial checkpoint, and merging a run's per-rank checkpoint.

The consolidated format (``args.load``, ``emulator.consolidate``'s output) is one
``torch.save``d dict from each parameter name of the TP=1 model to its full tensor, so runs of
every tensor-parallel size start from the same weights. DeepSpeed saves one
``mp_rank_XX_model_states.pt`` per tensor-parallel rank, whose ``"module"`` entry is that rank's
state dict; a merge takes each replicated parameter from rank 0.
"""
from __future__ import annotations

import argparse
from pathlib import Path

import torch
from megatron.core import parallel_state
from torch import nn

from emulator.partition import partition, unpartition


def load_consolidated_checkpoint(model: nn.Module, args: argparse.Namespace) -> None:
    """Copy this rank's partition of every parameter from ``args.load``."""
    state = torch.load(args.load, map_location="cpu", weights_only=True)
    rank = parallel_state.get_tensor_model_parallel_rank()
    world = parallel_state.get_tensor_model_parallel_world_size()
    own = dict(model.named_parameters())
    if set(own) != set(state):
        raise RuntimeError(f"{args.load} does not match the model: only in the model "
                           f"{sorted(set(own) - set(state))}, only in the file {sorted(set(state) - set(own))}")
    with torch.no_grad():
        for name, param in own.items():
            part = partition(name, state[name], rank, world)
            if part.shape != param.shape:
                raise RuntimeError(f"{name}: partition {tuple(part.shape)}, parameter {tuple(param.shape)}")
            param.copy_(part)


def merge_checkpoint(tag_dir: str | Path) -> dict[str, torch.Tensor]:
    """The consolidated state dict of a DeepSpeed checkpoint tag (ranks 0, 1, ... while their
    ``mp_rank_XX_model_states.pt`` exist)."""
    modules = []
    while (path := Path(tag_dir) / f"mp_rank_{len(modules):02d}_model_states.pt").is_file():
        modules.append(torch.load(path, map_location="cpu", weights_only=True)["module"])
    if not modules:
        raise FileNotFoundError(f"no mp_rank_00_model_states.pt under {tag_dir}")
    merged: dict[str, torch.Tensor] = {}
    for name, value in modules[0].items():
        if isinstance(value, torch.Tensor):
            merged[name] = unpartition(name, [m[name] for m in modules])
    return merged
