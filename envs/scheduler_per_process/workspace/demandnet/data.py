"""The training set: a ``{"x": [rows, input_dim], "y": [rows, output_dim]}`` tensor file."""
from __future__ import annotations

import torch
from torch.utils.data import DataLoader, TensorDataset


def make_loader(path: str, per_device_batch_size: int) -> DataLoader:
    """Batches in file order (``demandnet.prepare`` writes the rows already shuffled)."""
    blob = torch.load(path, map_location="cpu", weights_only=True)
    dataset = TensorDataset(blob["x"].float(), blob["y"].float())
    return DataLoader(dataset, batch_size=per_device_batch_size, shuffle=False)
