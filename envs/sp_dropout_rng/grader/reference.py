"""What the README specifies, written by the judge: layout, batches, one float64 step, masks.

Nothing here comes from the revision: the batches are the grader's copy of the README's recipe,
the split parameters its layout table, the step its objective (MSE, plain SGD, dropout
``x * mask / (1 - p)``), and a mask what ``torch.nn.Dropout`` draws on a CPU rank
(``empty_like(x).bernoulli_(1 - p)``) from a stream in a given state.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from scenario import MODEL_PARALLEL_OFFSET, Scenario

Params = dict[str, torch.Tensor]
#: The README's layout table: split parameters (by name suffix) and the dimension they are cut along.
SPLIT = {"fc1.weight": 0, "fc1.bias": 0, "fc2.weight": 1}


def split_dim(name: str) -> int | None:
    return next((dim for suffix, dim in SPLIT.items() if name.endswith(suffix)), None)


def parameter_shapes(sc: Scenario) -> dict[str, tuple[int, ...]]:
    """Every parameter of the full (TP=1) model, in module order."""
    h, f = sc.hidden_size, sc.ffn_hidden_size
    shapes: dict[str, tuple[int, ...]] = {"input_proj.weight": (h, sc.input_dim), "input_proj.bias": (h,)}
    for i in range(sc.num_layers):
        block = {"ln.weight": (h,), "ln.bias": (h,), "fc1.weight": (f, h), "fc1.bias": (f,), "fc2.weight": (h, f),
                 "fc2.bias": (h,)}
        shapes |= {f"stack.layers.{i}.{leaf}": shape for leaf, shape in block.items()}
    return shapes | {"final_ln.weight": (h,), "final_ln.bias": (h,), "head.weight": (sc.output_dim, h),
                     "head.bias": (sc.output_dim,)}


def batch(sc: Scenario, step: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Batch ``step`` of ``data.seed`` (float64): inputs ``[s, b, input_dim]``, targets ``[s, b, out]``."""
    gen = torch.Generator().manual_seed(sc.data_seed * 100_003 + step)
    x = torch.randn(sc.seq_length, sc.batch_size, sc.input_dim, generator=gen)
    mix = torch.randn(sc.input_dim, sc.output_dim, generator=gen)
    y = torch.tanh(x @ mix) + 0.1 * torch.randn(sc.seq_length, sc.batch_size, sc.output_dim, generator=gen)
    return x.double(), y.double()


def sgd_step(sc: Scenario, params: Params, masks: Params, step: int) -> tuple[Params, float]:
    """The full model after the README's step ``step`` with these full-sequence masks, and its loss."""
    p = {k: v.detach().double().clone().requires_grad_(True) for k, v in params.items()}
    x, y = batch(sc, step)
    h = F.linear(x, p["input_proj.weight"], p["input_proj.bias"]) * masks["embed_dropout"] / (1 - sc.embed_dropout)
    for i in range(sc.num_layers):
        w = {leaf: p[f"stack.layers.{i}.{leaf}"] for leaf in ("ln.weight", "ln.bias", "fc1.weight", "fc1.bias",
                                                             "fc2.weight", "fc2.bias")}
        u = F.layer_norm(h, (sc.hidden_size,), w["ln.weight"], w["ln.bias"], eps=1e-5)
        u = F.linear(F.gelu(F.linear(u, w["fc1.weight"], w["fc1.bias"])), w["fc2.weight"], w["fc2.bias"])
        h = h + u * masks[f"stack.layers.{i}.hidden_dropout"] / (1 - sc.hidden_dropout)
    h = F.layer_norm(h, (sc.hidden_size,), p["final_ln.weight"], p["final_ln.bias"], eps=1e-5)
    loss = F.mse_loss(F.linear(h, p["head.weight"], p["head.bias"]), y)
    grads = torch.autograd.grad(loss, list(p.values()))
    return {k: (v - sc.lr * g).detach() for (k, v), g in zip(p.items(), grads, strict=True)}, float(loss)


def draws(state: torch.Tensor, sc: Scenario, steps: int) -> list[list[torch.Tensor]]:
    """The masks the README's dropouts draw in turn over ``steps`` steps from a CPU generator in
    ``state`` (a dropout with p = 0 draws nothing and keeps everything)."""
    gen = torch.Generator()
    gen.set_state(state)
    ones = torch.ones(sc.mask_shape, dtype=torch.bool)
    return [[torch.empty(sc.mask_shape).bernoulli_(1.0 - p, generator=gen) != 0 if p else ones
             for _, p in sc.dropout_modules] for _ in range(steps)]


def model_parallel_state(sc: Scenario, rank: int) -> torch.Tensor:
    """The first state of megatron-core's model-parallel stream on ``rank``: ``train.seed + 2718 + tp_rank``."""
    return torch.Generator().manual_seed(sc.seed + MODEL_PARALLEL_OFFSET + rank).get_state()
