"""In each rank: after the watched optimizer's last step, what the model reads and what the
optimizer holds.

For every parameter of the model the forward ran (``named_parameters()``): this rank's piece
(an FSDP2 ``Shard(0)`` DTensor's local tensor, else the whole tensor), whether the watched
optimizer holds that very tensor, and the weight decay of the group holding it; and how many
tensors the optimizer holds that the model does not. Runs in the revision's process: the judge
checks it against the saved model and its own reference.
"""
from __future__ import annotations

import torch
from rank_observer import RankObserver, cpu32  # the harness library's observer base


def piece(param: torch.Tensor) -> tuple[str, torch.Tensor]:
    try:
        from torch.distributed.tensor import DTensor, Shard  # noqa: PLC0415
    except ImportError:  # pragma: no cover
        return "full", cpu32(param)
    if isinstance(param, DTensor):
        placements = tuple(param.placements)
        if placements == (Shard(0),):
            return "shard0", cpu32(param.to_local())
        return "full", cpu32(param.full_tensor())
    return "full", cpu32(param)


class HoldingProbe(RankObserver):
    def on_step_post(self, optimizer: torch.optim.Optimizer, step: int) -> None:
        if step + 1 < self.steps:
            return
        model = self.model()
        if model is None:
            return
        decay = {}
        for group in optimizer.param_groups:
            for p in group["params"]:
                decay.setdefault(id(p), float(group.get("weight_decay", 0.0)))
        named = list(model.named_parameters())
        ids = {id(p) for _, p in named}
        kinds, pieces, held = {}, {}, {}
        for name, param in named:
            kinds[name], pieces[name] = piece(param)
            held[name] = decay.get(id(param), -1.0)
        self.write({"steps": step + 1, "kinds": kinds, "pieces": pieces, "decay": held,
                    "orphans": sum(1 for k in decay if k not in ids),
                    "requires_grad": {n: bool(p.requires_grad) for n, p in named}})


def start() -> None:
    observer = HoldingProbe.from_env()
    if observer is not None:
        observer.install()
