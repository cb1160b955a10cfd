"""Loading the base checkpoint and sharding it with FSDP."""
from __future__ import annotations

import logging

import torch
from torch.distributed.device_mesh import DeviceMesh
from torch.distributed.fsdp import fully_shard
from transformers import AutoModelForCausalLM, PreTrainedModel

from ftpipe.config import Config
from ftpipe.hub_cache import resolve_cache_dir

log = logging.getLogger(__name__)


def load_base_model(cfg: Config, rank: int) -> PreTrainedModel:
    """Load the configured revision of the base checkpoint from this rank's cache, in train mode.

    Collective (the cache lookup may wait for the node's copy to be filled).
    """
    cache_dir = resolve_cache_dir(cfg.cache, cfg.model.repo_id, cfg.model.revision, rank)
    model = AutoModelForCausalLM.from_pretrained(
        cfg.model.repo_id,
        revision=cfg.model.revision,
        cache_dir=cache_dir,
        local_files_only=True,
        hidden_dropout=cfg.model.hidden_dropout,
        attention_dropout=cfg.model.attention_dropout,
    )
    if rank == 0:
        log.info("loaded %s@%s from %s", cfg.model.repo_id, cfg.model.revision, cache_dir)
    # from_pretrained() hands back a model in eval mode; dropout is part of the recipe.
    return model.train()


def shard_model(model: PreTrainedModel, mesh: DeviceMesh) -> PreTrainedModel:
    """FSDP2: one unit per transformer block plus the root (embeddings, final norm, head)."""
    for block in model.gpt_neox.layers:
        fully_shard(block, mesh=mesh)
    fully_shard(model, mesh=mesh)
    return model


def parameter_count(model: torch.nn.Module) -> int:
    """Number of parameters of the unsharded model (works before or after sharding)."""
    return sum(p.numel() for p in model.parameters())
