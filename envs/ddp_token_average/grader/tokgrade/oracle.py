"""The objective's gradient, computed independently of the workspace.

For one update: the mean next-token cross-entropy over every supervised token of every record
the update consumed (all ranks, all accumulation steps), differentiated at the parameters the
update started from. The model is rebuilt from the grader's own copy of the architecture.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import torch
import torch.nn.functional as F
from transformers import AutoConfig, AutoModelForCausalLM, PreTrainedModel

from tokgrade.datagen import IGNORE_INDEX, Record

ARCHITECTURE = Path(__file__).resolve().parent.parent / "neox_tiny.json"


class OracleError(ValueError):
    """The recorded update cannot be matched to the reference model."""


def build_reference_model() -> PreTrainedModel:
    """The case's architecture in float64, training mode (dropout is zero)."""
    config = AutoConfig.from_pretrained(ARCHITECTURE)
    model: PreTrainedModel = AutoModelForCausalLM.from_config(config)  # type: ignore[no-untyped-call]
    model.double()
    model.train()
    return model


def match_names(model_names: Sequence[str], recorded: Sequence[str]) -> dict[str, str]:
    """Map each reference parameter to the single recorded name it is a dotted suffix of."""
    mapping: dict[str, str] = {}
    for name in model_names:
        hits = [r for r in recorded if r == name or r.endswith("." + name)]
        if len(hits) != 1:
            raise OracleError(f"parameter {name}: {len(hits)} recorded matches ({hits[:3]})")
        mapping[name] = hits[0]
    return mapping


def load_parameters(
    model: PreTrainedModel, params: dict[str, torch.Tensor], mapping: dict[str, str]
) -> None:
    """Copy the recorded pre-update parameters into the reference model."""
    with torch.no_grad():
        for name, param in model.named_parameters():
            value = params[mapping[name]]
            if value.shape != param.shape:
                raise OracleError(f"parameter {name}: recorded shape {tuple(value.shape)}")
            param.copy_(value.to(param.dtype))


def _target_loss_sum(model: PreTrainedModel, record: Record) -> torch.Tensor:
    ids = torch.tensor([record.input_ids], dtype=torch.long)
    labels = torch.tensor(record.labels[1:], dtype=torch.long)
    logits = model(input_ids=ids).logits[0, :-1]
    return F.cross_entropy(logits, labels, ignore_index=IGNORE_INDEX, reduction="sum")


def reference_gradient(model: PreTrainedModel, records: Sequence[Record]) -> torch.Tensor:
    """Flat gradient of the global supervised-token mean cross-entropy over ``records``."""
    model.zero_grad(set_to_none=True)
    total = sum(record.target_count for record in records)
    loss = torch.zeros((), dtype=torch.float64)
    for record in records:
        loss = loss + _target_loss_sum(model, record)
    torch.autograd.backward(loss / total)
    return flat_gradient(model, {n: p.grad for n, p in model.named_parameters()})


def flat_gradient(
    model: PreTrainedModel,
    grads: dict[str, torch.Tensor | None],
    mapping: dict[str, str] | None = None,
) -> torch.Tensor:
    """Gradients in the reference model's parameter order, float64, zeros where absent."""
    parts = []
    for name, param in model.named_parameters():
        grad = grads[mapping[name] if mapping else name]
        parts.append(
            torch.zeros(param.numel(), dtype=torch.float64)
            if grad is None
            else grad.detach().reshape(-1).to(torch.float64)
        )
    return torch.cat(parts)


def relative_l2(value: torch.Tensor, reference: torch.Tensor) -> float:
    """``||value - reference|| / ||reference||``."""
    return float((value - reference).norm() / reference.norm().clamp_min(1e-30))
