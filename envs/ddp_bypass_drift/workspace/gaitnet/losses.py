"""Training objectives: classification loss and the cross-view consistency term."""
from __future__ import annotations

import torch
import torch.nn.functional as F

from gaitnet.model import ActivityNet


def classification_loss(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """Mean cross-entropy over the rows of the batch."""
    return F.cross_entropy(logits, labels)


def view_consistency(model: ActivityNet, x: torch.Tensor, x_view: torch.Tensor) -> torch.Tensor:
    """Mean over rows of the squared L2 distance between the embeddings of the two views of a
    window (wrist sensor ``x``, ankle sensor ``x_view``)."""
    return (model.embed(x) - model.embed(x_view)).pow(2).sum(dim=-1).mean()
