"""The specification, replayed in one process (trusted; imported by the judge only).

Each step: every rank's micro-batch (the README's slicing) runs forward under float16 autocast
from the current fp32 parameters, its loss multiplied by the current scale, backward; the
ranks' gradients are averaged (FSDP's reduction); if that gradient holds an inf or nan anywhere
the step is skipped and the scale multiplied by ``backoff_factor``, otherwise the gradient is
multiplied by the float32 reciprocal of the scale (GradScaler's unscale) and SGD applied, and
after ``growth_interval`` consecutive taken steps the scale is multiplied by ``growth_factor``.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from fixtures import initial_state, table


class Tower(nn.Module):
    def __init__(self, features: int, hidden: int) -> None:
        super().__init__()
        self.inp, self.out = nn.Linear(features, hidden), nn.Linear(hidden, 1)

    def forward(self, x):
        return self.out(torch.relu(self.inp(x)))


class Twin(nn.Module):
    def __init__(self, features: int, hidden: int) -> None:
        super().__init__()
        self.demand, self.returns = Tower(features, hidden), Tower(features, hidden)

    def forward(self, a, b):
        return torch.cat([self.demand(a), self.returns(b)], dim=1)


@dataclass(frozen=True)
class Replay:
    taken: list[bool]
    scales: list[float]
    params: dict[str, torch.Tensor]


def replay(sc) -> Replay:
    torch.manual_seed(0)
    model = Twin(sc.features, sc.hidden)
    model.load_state_dict(initial_state(sc))
    data = table(sc)
    names = [n for n, _ in model.named_parameters()]
    scale, tracker = float(sc.init_scale), 0
    taken, scales = [], []
    n = sc.rows_per_rank
    for step in range(sc.steps):
        total = {name: torch.zeros_like(p) for name, p in model.named_parameters()}
        for rank in range(sc.world):
            start = (step * sc.world + rank) * n
            a, b, y = (data[k][start:start + n] for k in ("x_demand", "x_returns", "target"))
            model.zero_grad(set_to_none=True)
            with torch.autocast("cpu", dtype=torch.float16):
                out = model(a, b)
            loss = nn.functional.mse_loss(out.float(), y)
            (loss * torch.tensor(scale, dtype=torch.float32)).backward()
            for name, p in model.named_parameters():
                total[name] += p.grad
        grads = {k: v / sc.world for k, v in total.items()}
        finite = all(bool(torch.isfinite(g).all()) for g in grads.values())
        if finite:
            inv = torch.tensor(scale, dtype=torch.float64).reciprocal().float()
            with torch.no_grad():
                for name, p in model.named_parameters():
                    p.add_(grads[name] * inv, alpha=-sc.lr)
            tracker += 1
            if tracker == sc.growth_interval:
                scale, tracker = scale * sc.growth_factor, 0
        else:
            scale, tracker = scale * sc.backoff_factor, 0
        taken.append(finite)
        scales.append(scale)
    return Replay(taken, scales, {k: v.detach().clone() for k, v in model.state_dict().items() if k in names})
