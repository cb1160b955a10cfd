"""The judge's own float64 training step of the README's model, given the masks a run drew.

Nothing here comes from the revision: the data generator is the grader's copy of the README's
recipe, the layout (which parameters are split, along which dimension) is the README's table,
and the step is the README's: MSE loss, plain SGD, dropout ``x * mask / (1 - p)``.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F

from scenario import Scenario

#: Split parameters (README layout table): name suffix -> dimension split across TP ranks.
SPLIT_DIMS = {"fc1.weight": 0, "fc1.bias": 0, "fc2.weight": 1}


def split_dim(name: str) -> int | None:
    """The dimension ``name`` is split along, or None for a replicated parameter."""
    for suffix, dim in SPLIT_DIMS.items():
        if name.endswith(suffix):
            return dim
    return None


def parameter_shapes(sc: Scenario) -> dict[str, tuple[int, ...]]:
    """Full (TP=1) shapes of every README parameter, in module order."""
    h, f = sc.hidden_size, sc.ffn_hidden_size
    shapes: dict[str, tuple[int, ...]] = {"input_proj.weight": (h, sc.input_dim), "input_proj.bias": (h,)}
    for i in range(sc.num_layers):
        p = f"stack.layers.{i}."
        shapes |= {p + "ln.weight": (h,), p + "ln.bias": (h,), p + "fc1.weight": (f, h), p + "fc1.bias": (f,),
                   p + "fc2.weight": (h, f), p + "fc2.bias": (h,)}
    shapes |= {"final_ln.weight": (h,), "final_ln.bias": (h,), "head.weight": (sc.output_dim, h),
               "head.bias": (sc.output_dim,)}
    return shapes


def shard_shape(full: tuple[int, ...], dim: int | None, tp: int) -> tuple[int, ...]:
    """One rank's shape of a parameter of full shape ``full``."""
    if dim is None:
        return full
    out = list(full)
    out[dim] //= tp
    return tuple(out)


def batch(sc: Scenario, step: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The README's synthetic batch ``step`` for ``data.seed`` = ``sc.data_seed`` (float64)."""
    gen = torch.Generator().manual_seed(sc.data_seed * 100_003 + step)
    s, b = sc.seq_length, sc.batch_size
    x = torch.randn(s, b, sc.input_dim, generator=gen)
    mix = torch.randn(sc.input_dim, sc.output_dim, generator=gen)
    y = torch.tanh(x @ mix) + 0.1 * torch.randn(s, b, sc.output_dim, generator=gen)
    return x.double(), y.double()


def sgd_step(sc: Scenario, params: dict[str, torch.Tensor], masks: dict[str, torch.Tensor],
             step: int) -> tuple[dict[str, torch.Tensor], float]:
    """Full parameters after one README step with these full-sequence masks, and the loss."""
    p = {k: v.detach().clone().double().requires_grad_(True) for k, v in params.items()}
    x, y = batch(sc, step)

    def dropout(h: torch.Tensor, name: str, prob: float) -> torch.Tensor:
        return h * masks[name].double() / (1.0 - prob)

    h = F.linear(x, p["input_proj.weight"], p["input_proj.bias"])
    h = dropout(h, "embed_dropout", sc.embed_dropout)
    for i in range(sc.num_layers):
        q = f"stack.layers.{i}."
        u = F.layer_norm(h, (sc.hidden_size,), p[q + "ln.weight"], p[q + "ln.bias"], eps=1e-5)
        u = F.gelu(F.linear(u, p[q + "fc1.weight"], p[q + "fc1.bias"]))
        u = F.linear(u, p[q + "fc2.weight"], p[q + "fc2.bias"])
        h = h + dropout(u, q + "hidden_dropout", sc.hidden_dropout)
    h = F.layer_norm(h, (sc.hidden_size,), p["final_ln.weight"], p["final_ln.bias"], eps=1e-5)
    loss = F.mse_loss(F.linear(h, p["head.weight"], p["head.bias"]), y)
    grads = torch.autograd.grad(loss, list(p.values()))
    updated = {k: (v - sc.lr * g).detach() for (k, v), g in zip(p.items(), grads, strict=True)}
    return updated, float(loss.detach())
