"""Probe: do the tensor-parallel ranks draw their own dropout masks?

Launch with the team's tensor-parallel size from the workspace root:

    torchrun --standalone --nproc_per_node=2 outputs/probe_masks.py

Builds the model of configs/tp2-sp.toml the way seqmodel.train does (same seeding, same
layers), runs two training steps with hooks on every nn.Dropout, gathers each module's mask
from every rank and prints, per step and module, the share of positions on which the ranks'
masks agree ("agree") beside what independent masks would give ("independent" = p² + (1−p)²).
With sequence parallelism each rank holds a different chunk of the sequence, so the README
expects agree ≈ independent; 1.000 means the ranks applied one shared mask.
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.getcwd())

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch import nn  # noqa: E402

from seqmodel import config as config_mod  # noqa: E402
from seqmodel import data, model, parallel, rng  # noqa: E402
from seqmodel.sequence import allreduce_sequence_parallel_grads  # noqa: E402

STEPS = 2


def main() -> None:
    cfg = config_mod.load("configs/tp2-sp.toml", sys.argv[1:])
    parallel.init_distributed(cfg.parallel.tensor_model_parallel_size)
    device = parallel.device()
    rng.seed_everything(cfg.train.seed, on_cpu=device.type == "cpu")
    net = model.build(cfg, device)
    net.train()
    optimizer = torch.optim.SGD(net.parameters(), lr=cfg.train.lr)
    masks: list[tuple[str, float, torch.Tensor]] = []
    names = {id(m): n for n, m in net.named_modules()}

    def hook(module: nn.Module, args: object, output: torch.Tensor) -> None:
        if isinstance(module, nn.Dropout) and module.training:
            masks.append((names.get(id(module), "?"), module.p, (output != 0).to(torch.uint8)))

    for module in net.modules():
        if isinstance(module, nn.Dropout):
            module.register_forward_hook(hook)
    rank = parallel.tp_rank()
    if rank == 0:
        print(f"probe: TP={parallel.tp_size()}, sequence_parallel={cfg.parallel.sequence_parallel}, "
              f"{STEPS} steps, dropout masks compared across tensor-parallel ranks", flush=True)
    for step in range(STEPS):
        masks.clear()
        x, y = data.batch(cfg, step)
        optimizer.zero_grad(set_to_none=True)
        F.mse_loss(net(x.to(device)).float(), y.to(device)).backward()
        allreduce_sequence_parallel_grads(net)
        optimizer.step()
        for name, p, mask in masks:
            parts = [torch.empty_like(mask) for _ in range(parallel.tp_size())]
            dist.all_gather(parts, mask.contiguous(), group=parallel.tp_group())
            if rank == 0:
                agree = min(float((parts[0] == other).double().mean()) for other in parts[1:])
                print(f"step {step} {name} agree={agree:.3f}")
                print(f"step {step} {name} independent={p * p + (1 - p) * (1 - p):.3f}")
    parallel.shutdown()


if __name__ == "__main__":
    main()
