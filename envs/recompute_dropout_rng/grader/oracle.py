"""What the README specifies, computed by the judge alone (trusted; no revision code).

``draw``: the masks one training forward takes from a CPU generator in a given state, as
``torch.nn.Dropout`` draws them on CPU ranks (``empty_like(x).bernoulli_(1 - p)``, in the order
the README's modules run; a dropout with ``p = 0`` draws nothing). ``gradient``: the README's
loss written out in float64 without any recomputation (the mean over ranks of each rank's mean
next-token cross-entropy, each rank's dropout masks applied as ``x * mask / (1 - p)``) and its
gradient at the given parameters.
"""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from scenario import Scenario

State = dict[str, torch.Tensor]


def draw(sc: Scenario, state: torch.Tensor) -> tuple[dict[str, torch.Tensor], torch.Tensor]:
    """One forward's masks (float32 0/1, by module name) from a generator in ``state``, and the
    generator's state after them."""
    gen = torch.Generator()
    gen.set_state(state)
    masks = {}
    for name, p, shape in sc.dropouts:
        if p > 0:
            masks[name] = torch.empty(shape, dtype=torch.float32).bernoulli_(1.0 - p, generator=gen)
    return masks, gen.get_state()


def forward_loss(sc: Scenario, p: State, rows: torch.Tensor, masks: dict[str, torch.Tensor]) -> torch.Tensor:
    """Mean next-token cross-entropy of the README's model on ``rows`` ``[b, seq_len + 1]``."""
    rate = {name: prob for name, prob, _ in sc.dropouts}

    def drop(name: str, x: torch.Tensor) -> torch.Tensor:
        mask = masks.get(name)
        return x if mask is None else x * mask.to(x.dtype) / (1.0 - rate[name])

    ids, targets = rows[:, :-1], rows[:, 1:]
    b, t = ids.shape
    d, h = sc.d_model, sc.n_heads
    x = drop("drop", p["tok.weight"][ids] + p["pos.weight"][torch.arange(t)])
    future = torch.ones(t, t, dtype=torch.bool).triu(1)
    for i in range(sc.n_layers):
        w = {leaf[len(f"blocks.{i}."):]: v for leaf, v in p.items() if leaf.startswith(f"blocks.{i}.")}
        u = F.layer_norm(x, (d,), w["ln1.weight"], w["ln1.bias"], eps=1e-5)
        q, k, v = F.linear(u, w["attn.qkv.weight"], w["attn.qkv.bias"]).view(b, t, 3, h, d // h).permute(2, 0, 3, 1, 4)
        probs = (q @ k.transpose(-2, -1) / math.sqrt(d // h)).masked_fill(future, float("-inf")).softmax(dim=-1)
        out = (drop(f"blocks.{i}.attn.attn_drop", probs) @ v).transpose(1, 2).reshape(b, t, d)
        x = x + drop(f"blocks.{i}.attn.resid_drop", F.linear(out, w["attn.proj.weight"], w["attn.proj.bias"]))
        u = F.layer_norm(x, (d,), w["ln2.weight"], w["ln2.bias"], eps=1e-5)
        u = F.linear(F.gelu(F.linear(u, w["ffn.up.weight"], w["ffn.up.bias"])), w["ffn.down.weight"], w["ffn.down.bias"])
        x = x + drop(f"blocks.{i}.ffn.drop", u)
    x = F.layer_norm(x, (d,), p["ln_f.weight"], p["ln_f.bias"], eps=1e-5)
    logits = F.linear(x, p["head.weight"])
    return F.cross_entropy(logits.reshape(-1, sc.vocab_size), targets.reshape(-1))


def gradient(sc: Scenario, params: State, per_rank: list[tuple[torch.Tensor, dict[str, torch.Tensor]]]) -> tuple[State, float]:
    """The float64 gradient of the mean over ranks of each rank's loss (its rows, its masks), and the loss."""
    p = {name: value.detach().to(torch.float64).clone().requires_grad_(True) for name, value in params.items()}
    loss = sum(forward_loss(sc, p, rows, masks) for rows, masks in per_rank) / len(per_rank)
    grads = torch.autograd.grad(loss, list(p.values()))
    return dict(zip(p, grads, strict=True)), float(loss.detach())
