"""Training losses."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from sft.data import IGNORE_INDEX


def response_token_loss(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """Next-token cross-entropy averaged over response tokens.

    Position ``t`` predicts token ``t + 1``; positions whose target label is ``IGNORE_INDEX``
    (prompt and padding) do not contribute.
    """
    shift_logits = logits[:, :-1, :].float()
    shift_labels = labels[:, 1:].to(shift_logits.device)
    return F.cross_entropy(
        shift_logits.reshape(-1, shift_logits.size(-1)),
        shift_labels.reshape(-1),
        ignore_index=IGNORE_INDEX,
    )
