"""The README's training at one tensor-parallel rank, written out in torch (judge side).

bf16 runs (``deepspeed.bf16``), as DeepSpeed trains them: fp32 masters, initially the bf16
weights the model was cast to; every step computes in bf16 from ``bf16(master)``, takes the fp32
mean squared error of the bf16 output and accumulates the bf16 gradients in fp32. fp32 runs
compute in fp32 throughout. Either way the global L2 norm of every fp32 gradient gives the clip
coefficient ``c / (norm + 1e-6)``, applied to every gradient when below 1, and plain SGD updates
the masters.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from fixtures import Tensors
from scenario import Scenario


@dataclass(frozen=True)
class Trajectory:
    """Masters at the start of every step (``starts[k]``: before step ``k``), after the last
    step, and each step's pre-clipping norm."""

    starts: list[Tensors]
    final: Tensors
    norms: list[float]

    def clipped(self, max_norm: float) -> int:
        return sum(max_norm > 0 and max_norm / (n + 1e-6) < 1 for n in self.norms)


def emulate(w: Tensors, x: torch.Tensor, layers: int) -> torch.Tensor:
    """The emulator's forward: input_proj, ``layers`` residual LayerNorm-MLP blocks, final_ln, head."""
    h = F.linear(x, w["input_proj.weight"], w["input_proj.bias"])
    for i in range(layers):
        block = f"blocks.{i}"
        z = F.layer_norm(h, h.shape[-1:], w[f"{block}.ln.weight"], w[f"{block}.ln.bias"], 1e-5)
        z = F.linear(F.gelu(F.linear(z, w[f"{block}.mlp.fc1.weight"], w[f"{block}.mlp.fc1.bias"])),
                     w[f"{block}.mlp.fc2.weight"], w[f"{block}.mlp.fc2.bias"])
        h = h + z
    h = F.layer_norm(h, h.shape[-1:], w["final_ln.weight"], w["final_ln.bias"], 1e-5)
    return F.linear(h, w["head.weight"], w["head.bias"])


def train(sc: Scenario, weights: Tensors, x: torch.Tensor, y: torch.Tensor) -> Trajectory:
    """``sc.steps`` steps from ``weights`` on the samples ``x``, ``y``."""
    compute = torch.bfloat16 if sc.bf16 else torch.float32
    masters = {k: v.to(compute).float() for k, v in weights.items()}
    starts, norms = [], []
    for step in range(sc.steps):
        starts.append({k: v.clone() for k, v in masters.items()})
        index = torch.tensor(sc.sample_index(step))
        low = {k: v.detach().to(compute).requires_grad_(True) for k, v in masters.items()}
        loss = F.mse_loss(emulate(low, x[index].to(compute), sc.num_layers).float(), y[index])
        grads = [g.float() for g in torch.autograd.grad(loss, list(low.values()))]
        norm = float(torch.linalg.vector_norm(torch.stack([torch.linalg.vector_norm(g) for g in grads])))
        coefficient = sc.max_norm / (norm + 1e-6)
        factor = coefficient if sc.max_norm > 0 and coefficient < 1 else 1.0
        norms.append(norm)
        masters = {k: m - sc.lr * (g * factor) for (k, m), g in zip(masters.items(), grads, strict=True)}
    return Trajectory(starts, masters, norms)
