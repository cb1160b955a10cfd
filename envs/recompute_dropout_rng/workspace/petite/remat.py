"""Activation recomputation for the block stack (``[remat]`` in the config).

``blocks``: every block is wrapped with torch's ``checkpoint_wrapper``, so only its input is
kept and its activations are rebuilt during backward. ``segments``: the stack runs through
``torch.utils.checkpoint.checkpoint_sequential`` in ``remat.segments`` segments (the last one
keeps its activations, as torch does). ``off``: nothing is recomputed.
"""
from __future__ import annotations

import torch
from torch import nn
from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import CheckpointImpl, checkpoint_wrapper
from torch.utils.checkpoint import checkpoint_sequential

from .settings import RematSettings


class SegmentedStack(nn.Sequential):
    """The block stack, run segment by segment through ``checkpoint_sequential``."""

    def __init__(self, blocks: nn.Sequential, segments: int, use_reentrant: bool, deterministic: bool) -> None:
        super().__init__(*blocks)
        self.segments = min(segments, len(blocks))
        self.use_reentrant = use_reentrant
        self.deterministic = deterministic

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not (self.training and torch.is_grad_enabled()):
            return super().forward(x)
        return checkpoint_sequential(self, self.segments, x, use_reentrant=self.use_reentrant,
                                     preserve_rng_state=self.deterministic)


def enable(model: nn.Module, remat: RematSettings, *, deterministic: bool) -> nn.Module:
    """Turn on recomputation for ``model.blocks`` as ``remat.mode`` says; returns the model."""
    if remat.mode == "off":
        return model
    if remat.mode == "segments":
        model.blocks = SegmentedStack(model.blocks, remat.segments, remat.use_reentrant, deterministic)
        return model
    impl = CheckpointImpl.REENTRANT if remat.use_reentrant else CheckpointImpl.NO_REENTRANT
    for index, block in enumerate(model.blocks):
        model.blocks[index] = checkpoint_wrapper(block, checkpoint_impl=impl, preserve_rng_state=deterministic)
    return model
