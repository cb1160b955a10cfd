"""Process group, device mesh and the final FSDP2 wrapping of a model for training."""
from __future__ import annotations

import os

import torch
import torch.distributed as dist
from torch import nn
from torch.distributed.checkpoint.state_dict import StateDictOptions, set_model_state_dict
from torch.distributed.device_mesh import DeviceMesh, init_device_mesh
from torch.distributed.fsdp import fully_shard


def start() -> DeviceMesh:
    dist.init_process_group(os.environ.get("TRAINFAIL_BACKEND", "gloo"))
    return init_device_mesh("cpu", (dist.get_world_size(),))


def prepare(model: nn.Module, optimizer: torch.optim.Optimizer, mesh: DeviceMesh):
    """Shard what the blocks left (stem, final norm, head) and hand both back for training."""
    fully_shard(model, mesh=mesh)
    return model, optimizer


def load_full_state(model: nn.Module, state: dict[str, torch.Tensor]) -> None:
    """Load an unsharded state dict (every rank holds all of it) into a partly sharded model."""
    set_model_state_dict(model, state, options=StateDictOptions(full_state_dict=True))


def full_state(model: nn.Module) -> dict[str, torch.Tensor]:
    """Every parameter unsharded (a collective: call it on every rank)."""
    return {name: p.full_tensor().detach().clone() for name, p in model.named_parameters()}


def stop() -> None:
    dist.barrier()
    dist.destroy_process_group()
    os._exit(0)  # torch 2.13's gloo can abort in static destructors at interpreter exit
