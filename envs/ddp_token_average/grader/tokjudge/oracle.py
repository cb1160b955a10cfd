"""The objective's gradient, computed independently of the workspace.

For one update: the mean next-token cross-entropy over every supervised token of every record
the update consumed (all ranks, all accumulation steps), differentiated in float64 at the
parameters the update started from, then clipped to the global norm the scenario sets the way
``torch.nn.utils.clip_grad_norm_`` does (the Trainer's clipping). The model is rebuilt from the
grader's own copy of the architecture, with the scenario's model size laid over it when the
scenario sets one (``params.model``).
"""

from __future__ import annotations

import json
import math
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import torch
import torch.nn.functional as F
from transformers import AutoConfig, AutoModelForCausalLM, PreTrainedModel

from tokjudge.observations import Architecture, Grads, Tensors
from tokkit.datagen import IGNORE_INDEX, Record
from tokkit.scenario import ModelShape

ARCHITECTURE = Path(__file__).resolve().parent.parent / "neox_tiny.json"
#: ``clip_grad_norm_`` divides by ``total_norm + 1e-6``.
CLIP_EPS = 1e-6


@dataclass(frozen=True)
class OracleGradient:
    """The objective's flat gradient (after clipping), its norm before, and the clip factor."""

    flat: torch.Tensor
    norm: float
    clip_coef: float


def build_reference_model(shape: ModelShape | None = None) -> PreTrainedModel:
    """The case's architecture (sized by ``shape`` when given) in float64, training mode
    (dropout is zero). A sized architecture is read from a JSON file like the pipeline's."""
    if shape is None:
        config = AutoConfig.from_pretrained(ARCHITECTURE)
    else:
        architecture = json.loads(ARCHITECTURE.read_text(encoding="utf-8"))
        architecture.update(shape.config_keys())
        with tempfile.TemporaryDirectory(prefix="tokavg-arch-") as folder:
            path = Path(folder) / "config.json"
            path.write_text(json.dumps(architecture), encoding="utf-8")
            config = AutoConfig.from_pretrained(path)
    model: PreTrainedModel = AutoModelForCausalLM.from_config(config)  # type: ignore[no-untyped-call]
    model.double()
    model.train()
    return model


def _flat_part(grad: torch.Tensor | None, shape: tuple[int, ...]) -> torch.Tensor:
    if grad is None:
        return torch.zeros(math.prod(shape), dtype=torch.float64)
    return grad.reshape(-1).to(torch.float64)


def relative_l2(value: torch.Tensor, reference: torch.Tensor) -> float:
    """``||value - reference|| / ||reference||`` (float64)."""
    diff = value.to(torch.float64) - reference.to(torch.float64)
    return float(diff.norm() / reference.to(torch.float64).norm().clamp_min(1e-30))


class Oracle:
    """A float64 copy of the case's model that differentiates the objective."""

    def __init__(self, shape: ModelShape | None = None) -> None:
        self.shape = shape
        self.model = build_reference_model(shape)
        self.architecture = Architecture({n: tuple(p.shape) for n, p in self.model.named_parameters()})

    def flat(self, grads: Grads) -> torch.Tensor:
        """Gradients in the architecture's order, float64, zeros where absent."""
        return torch.cat([_flat_part(grads[name], shape) for name, shape in self.architecture.shapes.items()])

    def load(self, params: Tensors) -> None:
        """Copy recorded parameters (architecture names, checked shapes) into the model."""
        with torch.no_grad():
            for name, param in self.model.named_parameters():
                param.copy_(params[name].to(torch.float64))

    def gradient(self, params: Tensors, records: Sequence[Record], max_grad_norm: float) -> OracleGradient:
        """The objective's gradient over ``records`` at ``params``, clipped when ``max_grad_norm > 0``."""
        self.load(params)
        self.model.zero_grad(set_to_none=True)
        total = sum(record.target_count for record in records)
        loss = torch.zeros((), dtype=torch.float64)
        for record in records:
            loss = loss + self._target_loss_sum(record)
        torch.autograd.backward(loss / total)
        flat = self.flat({n: p.grad for n, p in self.model.named_parameters()})
        norm = float(flat.norm())
        coef = min(1.0, max_grad_norm / (norm + CLIP_EPS)) if max_grad_norm > 0 else 1.0
        return OracleGradient(flat * coef, norm, coef)

    def _target_loss_sum(self, record: Record) -> torch.Tensor:
        ids = torch.tensor([record.input_ids], dtype=torch.long)
        labels = torch.tensor(record.labels[1:], dtype=torch.long)
        logits = self.model(input_ids=ids).logits[0, :-1]
        return F.cross_entropy(logits, labels, ignore_index=IGNORE_INDEX, reduction="sum")


class Oracles:
    """One Oracle per distinct model size, built on first use."""

    def __init__(self) -> None:
        self.built: dict[ModelShape | None, Oracle] = {}

    def get(self, shape: ModelShape | None) -> Oracle:
        """The oracle of the architecture sized by ``shape`` (None: as shipped)."""
        if shape not in self.built:
            self.built[shape] = Oracle(shape)
        return self.built[shape]
