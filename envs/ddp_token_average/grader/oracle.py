"""The objective and the optimizer, computed by the judge alone (trusted; no revision code).

``Oracle.gradient``: a float64 GPT-NeoX from the grader's own copy of the scenario's
architecture (``neox_tiny.json`` or ``neox_gpu.json``) differentiates, at an update's recorded parameters, the mean
next-token cross-entropy over every response token of the records the update consumed (all
ranks, all accumulation steps), clipped like ``clip_grad_norm_`` when ``max_grad_norm > 0``.
``Chain``: the optimizer the Trainer builds from the ``training`` section (``torch.optim.AdamW``,
weight decay only on ``Trainer.get_decay_parameter_names``, default betas and epsilon, the
schedule's learning rate with warm-up counted in optimizer updates), stepped on recorded values.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import torch
import torch.nn.functional as F
from scenario import Scenario
from sftdata import IGNORE_INDEX, Record
from torch import nn
from transformers import AutoConfig, AutoModelForCausalLM, get_scheduler
from transformers.trainer_pt_utils import get_parameter_names

#: ``clip_grad_norm_`` divides by ``total_norm + 1e-6``.
CLIP_EPS = 1e-6
#: ``Trainer.get_decay_parameter_names`` (Transformers 5.24): these names and every LayerNorm's
#: parameters get no weight decay.
NO_DECAY = [r"bias", r"layernorm", r"rmsnorm", r"(?:^|\.)norm(?:$|\.)", r"_norm(?:$|\.)"]
State = dict[str, torch.Tensor]


class Oracle:
    """A float64 copy of the scenario's model (dropout is zero in the architecture)."""

    def __init__(self, sc: Scenario) -> None:
        config = AutoConfig.from_pretrained(Path(__file__).resolve().parent / f"neox_{sc.architecture}.json")
        self.model = AutoModelForCausalLM.from_config(config).double().train()  # type: ignore[no-untyped-call]
        self.shapes = {name: tuple(p.shape) for name, p in self.model.named_parameters()}
        self.decay = set(get_parameter_names(self.model, [nn.LayerNorm], NO_DECAY))  # type: ignore[no-untyped-call]

    def flat(self, state: State) -> torch.Tensor:
        """The tensors of ``state`` in the model's order, one float64 vector."""
        return torch.cat([state[name].reshape(-1).to(torch.float64) for name in self.shapes])

    def gradient(self, params: State, records: Sequence[Record], max_grad_norm: float) -> tuple[torch.Tensor, float]:
        """The objective's gradient over ``records`` at ``params`` (clipped), and its norm before."""
        with torch.no_grad():
            for name, param in self.model.named_parameters():
                param.copy_(params[name])
        self.model.zero_grad(set_to_none=True)
        loss = torch.zeros((), dtype=torch.float64)
        for record in records:
            logits = self.model(input_ids=torch.tensor([record.input_ids])).logits[0, :-1]
            labels = torch.tensor(record.labels[1:])
            loss = loss + F.cross_entropy(logits, labels, ignore_index=IGNORE_INDEX, reduction="sum")
        (loss / sum(r.target_count for r in records)).backward()  # type: ignore[no-untyped-call]
        grad = self.flat(
            {n: p.grad if p.grad is not None else torch.zeros_like(p) for n, p in self.model.named_parameters()}
        )
        norm = float(grad.norm())
        return grad * (min(1.0, max_grad_norm / (norm + CLIP_EPS)) if max_grad_norm > 0 else 1.0), norm


class Chain:
    """The Trainer's AdamW and schedule in float32, stepped on recorded values (moments carry over)."""

    def __init__(self, sc: Scenario, oracle: Oracle) -> None:
        self.params = {name: nn.Parameter(torch.zeros(shape)) for name, shape in oracle.shapes.items()}
        groups = [
            {"params": [p for n, p in self.params.items() if n in oracle.decay], "weight_decay": sc.weight_decay},
            {"params": [p for n, p in self.params.items() if n not in oracle.decay], "weight_decay": 0.0},
        ]
        self.optimizer = torch.optim.AdamW(groups, lr=sc.learning_rate, betas=(0.9, 0.999), eps=1e-8)
        self.schedule = get_scheduler(sc.lr_scheduler_type, self.optimizer, num_warmup_steps=sc.warmup_steps,
                                      num_training_steps=sc.steps)  # fmt: skip

    def step(self, params: State, grads: State) -> State:
        """The parameters one update makes from ``params`` with ``grads``."""
        with torch.no_grad():
            for name, param in self.params.items():
                param.copy_(params[name])
                param.grad = grads[name].clone()
        self.optimizer.step()
        self.schedule.step()
        return {name: param.detach().clone() for name, param in self.params.items()}

    def miss(self, params: State, grads: State, after: State) -> float:
        """How far ``after`` is from one step from ``params`` with ``grads``, relative to that step."""
        expected = self.step(params, grads)

        def flat(state: State) -> torch.Tensor:
            return torch.cat([state[name].reshape(-1).to(torch.float64) for name in self.params])

        return float((flat(after) - flat(expected)).norm() / (flat(expected) - flat(params)).norm().clamp_min(1e-30))
