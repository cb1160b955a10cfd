"""The unsharded weights of an FSDP model, for `model.pt`."""
from __future__ import annotations

import torch
from torch.distributed.fsdp import FullStateDictConfig, FullyShardedDataParallel, StateDictType


def full_state(model: FullyShardedDataParallel) -> dict[str, torch.Tensor]:
    """Every parameter gathered whole on rank 0 (the other ranks get an empty dict)."""
    gather = FullStateDictConfig(rank0_only=True, offload_to_cpu=False)
    with FullyShardedDataParallel.state_dict_type(model, StateDictType.FULL_STATE_DICT, gather):
        return {name: tensor.detach().clone() for name, tensor in model.state_dict().items()}
