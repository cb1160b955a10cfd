"""Trainer customisation for supervised fine-tuning."""

from __future__ import annotations

from typing import Any

import torch
from torch import nn
from transformers import Trainer

from sft.losses import response_token_loss


class SFTTrainer(Trainer):
    """Trainer that scores only the response tokens of each record."""

    # compute_loss returns a mean over the micro-batch, so the Trainer still has to divide it
    # by the number of gradient-accumulation steps (see Trainer.loss_is_scaled_for_ga).
    loss_is_scaled_for_ga = False

    def compute_loss(
        self,
        model: nn.Module,
        inputs: dict[str, torch.Tensor],
        return_outputs: bool = False,
        num_items_in_batch: torch.Tensor | int | None = None,
    ) -> torch.Tensor | tuple[torch.Tensor, Any]:
        """Cross-entropy over the response tokens of the micro-batch."""
        labels = inputs.pop("labels")
        outputs = model(**inputs)
        loss = response_token_loss(outputs.logits, labels)
        return (loss, outputs) if return_outputs else loss
