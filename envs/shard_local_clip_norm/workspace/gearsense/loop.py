"""Trains GearNet with FSDP on every rank torchrun starts (gloo on CPU ranks).

    torchrun --standalone --nproc_per_node=2 -m gearsense.loop --recipe recipes/default.json
"""
from __future__ import annotations

import os

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.distributed.fsdp import FullyShardedDataParallel
from torch.nn.utils import parameters_to_vector, vector_to_parameters

from gearsense import export, journal, options, windows
from gearsense.net import GearNet
from gearsense.update import clipped_step


def build(recipe) -> GearNet:
    torch.manual_seed(recipe.seed)
    net = GearNet(recipe.channels, recipe.width, recipe.classes)
    if recipe.init:
        net.load_state_dict(torch.load(recipe.init, map_location="cpu", weights_only=True))
    # FSDP cannot sync module states from CPU tensors: every rank takes rank 0's weights, packed
    packed = parameters_to_vector(net.parameters())
    dist.broadcast(packed, src=0)
    vector_to_parameters(packed, net.parameters())
    return net


def main() -> None:
    recipe = options.parse()
    dist.init_process_group(os.environ.get("TRAINFAIL_BACKEND", "gloo"))
    rank, world = dist.get_rank(), dist.get_world_size()
    out = journal.Journal(recipe.out_dir, enabled=rank == 0)

    x, y = windows.open_signals(recipe, rank)

    model = FullyShardedDataParallel(build(recipe), device_id=torch.device("cpu"))
    optimizer = torch.optim.SGD(model.parameters(), lr=recipe.lr)
    accum = recipe.accum_steps

    for step in range(recipe.steps):
        running = torch.zeros(())
        for micro in range(accum):
            inputs, labels = windows.micro_batch(x, y, step, micro, rank, world, accum, recipe.rows_per_rank)
            loss = F.cross_entropy(model(inputs), labels) / accum
            loss.backward()
            running += loss.detach()
        grad_norm = clipped_step(model, optimizer, recipe.max_grad_norm, recipe.norm_type)
        dist.all_reduce(running)
        mean_loss = running.item() / world
        out.record(step, mean_loss, grad_norm)
    out.close()

    weights = export.full_state(model)
    if rank == 0:
        torch.save(weights, out.folder / "model.pt")
    # every rank leaves together; torch 2.13's gloo can abort in static destructors at interpreter exit
    dist.barrier()
    dist.destroy_process_group()
    os._exit(0)


if __name__ == "__main__":
    main()
