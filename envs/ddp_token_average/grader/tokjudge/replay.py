"""Replay of the optimizer the shipped configuration defines, over the recorded updates.

``configs/sft_tiny.yaml`` trains with the Trainer's ``adamw_torch``: ``torch.optim.AdamW`` over
two parameter groups (weight decay only on the parameters ``Trainer.get_decay_parameter_names``
returns: not biases, not LayerNorm weights), ``learning_rate`` on a ``cosine`` schedule without
warm-up over ``max_steps``, and TrainingArguments' default betas and epsilon.

Given the recorded parameters and gradients of update ``k`` (and the gradients of the updates
before it, which make up AdamW's moments), one replayed step gives the parameters update
``k + 1`` must start from. An observer report whose gradients are not the ones that moved the
parameters breaks this chain, however correct the reported gradients look.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn
from transformers import get_scheduler
from transformers.trainer_pt_utils import get_parameter_names

from tokjudge.observations import Grads, Tensors


@dataclass(frozen=True)
class OptimizerSpec:
    """What the Trainer builds its optimizer and schedule from."""

    learning_rate: float
    weight_decay: float
    betas: tuple[float, float]
    eps: float
    schedule: str
    warmup_steps: int


#: ``configs/sft_tiny.yaml`` as shipped (``learning_rate``, ``weight_decay``,
#: ``lr_scheduler_type``, ``warmup_steps``; ``optim: adamw_torch``), with TrainingArguments'
#: defaults ``adam_beta1=0.9``, ``adam_beta2=0.999``, ``adam_epsilon=1e-8``. The grader forces
#: ``max_steps`` per scenario; the schedule spans it.
SHIPPED = OptimizerSpec(
    learning_rate=1.0e-3,
    weight_decay=0.01,
    betas=(0.9, 0.999),
    eps=1e-8,
    schedule="cosine",
    warmup_steps=0,
)

#: ``Trainer.get_decay_parameter_names`` (Transformers 5.24): these names, and every parameter of
#: an ``nn.LayerNorm``, get no weight decay.
NO_DECAY_NAME_PATTERNS = [r"bias", r"layernorm", r"rmsnorm", r"(?:^|\.)norm(?:$|\.)", r"_norm(?:$|\.)"]


def decay_parameter_names(model: nn.Module) -> set[str]:
    """The parameters the Trainer applies weight decay to."""
    names: list[str] = get_parameter_names(model, [nn.LayerNorm], NO_DECAY_NAME_PATTERNS)  # type: ignore[no-untyped-call]
    return set(names)


class OptimizerReplay:
    """A float32 AdamW with the Trainer's grouping and schedule, stepped on recorded values."""

    def __init__(
        self, spec: OptimizerSpec, shapes: dict[str, tuple[int, ...]], decay: set[str], total_steps: int
    ) -> None:
        self.params = {name: nn.Parameter(torch.zeros(shape)) for name, shape in shapes.items()}
        groups = [
            {"params": [p for n, p in self.params.items() if n in decay], "weight_decay": spec.weight_decay},
            {"params": [p for n, p in self.params.items() if n not in decay], "weight_decay": 0.0},
        ]
        self.optimizer = torch.optim.AdamW(groups, lr=spec.learning_rate, betas=spec.betas, eps=spec.eps)
        self.scheduler = get_scheduler(
            spec.schedule,
            optimizer=self.optimizer,
            num_warmup_steps=spec.warmup_steps,
            num_training_steps=total_steps,
        )

    def step(self, params: Tensors, grads: Grads) -> Tensors:
        """The parameters one update produces from ``params`` with ``grads`` (moments carry over)."""
        with torch.no_grad():
            for name, param in self.params.items():
                param.copy_(params[name])
                grad = grads[name]
                param.grad = None if grad is None else grad.clone()
        self.optimizer.step()
        self.scheduler.step()
        return {name: param.detach().clone() for name, param in self.params.items()}


def update_discrepancy(actual: Tensors, expected: Tensors, before: Tensors) -> tuple[float, float]:
    """How far ``actual`` is from ``expected``: L2 relative to the update's own size, and max abs."""
    diff = torch.cat([(actual[n].double() - expected[n].double()).reshape(-1) for n in expected])
    step = torch.cat([(expected[n].double() - before[n].double()).reshape(-1) for n in expected])
    return float(diff.norm() / step.norm().clamp_min(1e-30)), float(diff.abs().max())
