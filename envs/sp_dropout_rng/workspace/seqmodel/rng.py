"""Seeding, Megatron style: a default stream and megatron-core's tracked streams.

``seed_everything(seed)`` seeds the default generator with ``seed`` on every rank (the
*default* stream: the same on all tensor-parallel ranks) and calls megatron-core's
``model_parallel_cuda_manual_seed(seed)``, which registers the tracked streams, among them the
*model-parallel* stream (``seed + 2718 + tp_rank``: a different one on every tensor-parallel
rank). Code enters a tracked stream with ``tensor_parallel.get_cuda_rng_tracker().fork()``.

megatron-core's tracker swaps the CUDA generator's state. On CPU ranks the generator that
dropout draws from is the CPU one, so ``use_host_generator()`` points the tracker's two state
hooks at it and registers a tracker whose ``add`` seeds a CPU state; ``fork``, the bookkeeping
and the seed layout stay megatron-core's own.
"""
from __future__ import annotations

import logging
import random

import torch
from megatron.core import tensor_parallel
from megatron.core.tensor_parallel import random as mcore_random


def _host_get_state(device: object = "cuda", clone: bool = False, graph_safe: bool = False) -> torch.Tensor:
    return torch.get_rng_state()


def _host_set_state(new_state: torch.Tensor, device: object = -1, graph_safe: bool = False) -> None:
    torch.set_rng_state(new_state)


class HostRNGStatesTracker(mcore_random.CudaRNGStatesTracker):
    """megatron-core's tracker with its states kept for the CPU generator."""

    def add(self, name: str, seed: int) -> None:
        self._is_initialized = True
        if seed in self.seeds_:
            raise Exception(f"seed {seed} already exists")
        self.seeds_.add(seed)
        if name in self.states_:
            raise Exception(f"rng state {name} already exists")
        self.states_[name] = torch.Generator().manual_seed(seed).get_state()


def use_host_generator() -> None:
    """Make megatron-core's RNG tracker drive the CPU generator (CPU ranks only)."""
    mcore_random._get_cuda_rng_state = _host_get_state
    mcore_random._set_cuda_rng_state = _host_set_state
    mcore_random._CUDA_RNG_STATE_TRACKER = HostRNGStatesTracker()
    mcore_random._CUDA_RNG_STATE_TRACKER_INITIALIZED = True
    # The tracker warns when the CPU state moves inside a fork; here that generator is the
    # tracked one, so it always moves.
    logging.getLogger(mcore_random.__name__).setLevel(logging.ERROR)


def seed_everything(seed: int, on_cpu: bool) -> None:
    """Default stream ``seed`` on every rank, tracked streams from megatron-core."""
    random.seed(seed)
    torch.manual_seed(seed)
    if on_cpu:
        use_host_generator()
    tensor_parallel.model_parallel_cuda_manual_seed(seed)
