"""The training samples: ``torch.save({"x": [N, input_dim], "y": [N, output_dim]})``.

Iteration ``i`` consumes samples ``i*B .. i*B + B - 1`` modulo ``N`` (file order, wrapping to
the start of the file when it runs out; no shuffling), so a run is a function of its files and
arguments only. Every tensor-parallel rank consumes the same samples.
"""
from __future__ import annotations

import argparse
from collections.abc import Iterator

import torch


def train_data_iterator(args: argparse.Namespace) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
    """``args.train_iters`` batches of ``args.micro_batch_size`` samples."""
    samples = torch.load(args.data_path, map_location="cpu", weights_only=True)
    features, targets = samples["x"].float(), samples["y"].float()
    total = features.shape[0]
    if targets.shape[0] != total:
        raise ValueError(f"{args.data_path}: {total} feature rows, {targets.shape[0]} target rows")
    if args.micro_batch_size > total:
        raise ValueError(f"micro_batch_size {args.micro_batch_size} is larger than the {total} samples")
    for iteration in range(args.train_iters):
        index = (iteration * args.micro_batch_size + torch.arange(args.micro_batch_size)) % total
        yield features[index], targets[index]
