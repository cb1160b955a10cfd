"""The specification, computed in one process in float64 (trusted; imported by the judge only).

The README's model from the grader's initial weights; at each step the global batch (every
rank's rows), the cross-entropy of the whole batch, and one update of the configured optimizer
(`torch.optim.AdamW` / `SGD` with momentum, in float64) over every trainable parameter, in two
groups: matrices decayed by `weight_decay`, norms and biases not at all. With `trainable =
"blocks"` the stem, final norm and head are not trained.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from fixtures import initial_state, table

OUTSIDE_BLOCKS = ("stem.", "norm.", "head.")


class _Block(nn.Module):
    def __init__(self, w: int) -> None:
        super().__init__()
        self.norm, self.up, self.down = nn.LayerNorm(w), nn.Linear(w, 2 * w), nn.Linear(2 * w, w)

    def forward(self, h):
        return h + self.down(nn.functional.gelu(self.up(self.norm(h))))


class _Net(nn.Module):
    def __init__(self, sc) -> None:
        super().__init__()
        self.stem = nn.Linear(sc.features, sc.width)
        self.blocks = nn.ModuleList(_Block(sc.width) for _ in range(sc.blocks))
        self.norm, self.head = nn.LayerNorm(sc.width), nn.Linear(sc.width, sc.classes)

    def forward(self, x):
        h = self.stem(x)
        for block in self.blocks:
            h = block(h)
        return self.head(self.norm(h))


@dataclass(frozen=True)
class Reference:
    losses: list[float]
    params: dict[str, torch.Tensor]
    initial: dict[str, torch.Tensor]
    trainable: list[str]


def trains(sc, name: str) -> bool:
    return sc.trainable == "all" or not name.startswith(OUTSIDE_BLOCKS)


def reference(sc) -> Reference:
    net = _Net(sc).double()
    init = initial_state(sc)
    net.load_state_dict({k: v.double() for k, v in init.items()})
    for name, p in net.named_parameters():
        p.requires_grad_(trains(sc, name))
    live = [(n, p) for n, p in net.named_parameters() if p.requires_grad]
    groups = [{"params": [p for _, p in live if p.ndim >= 2], "weight_decay": sc.weight_decay},
              {"params": [p for _, p in live if p.ndim < 2], "weight_decay": 0.0}]
    if sc.optim == "adamw":
        opt = torch.optim.AdamW(groups, lr=sc.lr, betas=(0.9, 0.999), eps=1e-8, foreach=False)
    else:
        opt = torch.optim.SGD(groups, lr=sc.lr, momentum=sc.momentum, foreach=False)
    data = table(sc)
    x, y = data["window"].double(), data["label"]
    g = sc.world * sc.per_rank
    losses = []
    for step in range(sc.steps):
        rows = (step * g + torch.arange(g)) % sc.rows
        opt.zero_grad(set_to_none=True)
        loss = nn.functional.cross_entropy(net(x[rows]), y[rows])
        loss.backward()
        opt.step()
        losses.append(float(loss))
    return Reference(losses, {n: p.detach().clone() for n, p in net.named_parameters()},
                     {k: v.double() for k, v in init.items()}, [n for n, _ in live])
