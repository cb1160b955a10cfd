"""Consolidated checkpoints and DeepSpeed's per-rank model files.

A consolidated checkpoint is one ``torch.save``d dict from every parameter name of the
TP=1 model to its full tensor; every run starts from one, whatever its tensor-parallel size.
A DeepSpeed checkpoint tag holds one ``mp_rank_XX_model_states.pt`` per tensor-parallel rank
whose ``"module"`` entry is that rank's state dict; :func:`merge_tag` turns it back into the
consolidated form.
"""
from __future__ import annotations

from pathlib import Path

import torch
from torch import nn

from surrogate.sharding import local_piece, reassemble


@torch.no_grad()
def restore(model: nn.Module, path: str | Path, tp_rank: int, tp_size: int) -> None:
    """Fill this rank's parameters from the consolidated checkpoint at ``path``."""
    full = torch.load(path, map_location="cpu", weights_only=True)
    params = dict(model.named_parameters())
    if params.keys() != full.keys():
        raise KeyError(f"{path}: parameters missing {sorted(params.keys() - full.keys())}, "
                       f"not in the model {sorted(full.keys() - params.keys())}")
    for name, param in params.items():
        piece = local_piece(name, full[name], tp_rank, tp_size)
        if piece.shape != param.shape:
            raise ValueError(f"{path}: {name} gives {tuple(piece.shape)} to rank {tp_rank}, "
                             f"the model holds {tuple(param.shape)}")
        param.copy_(piece)


def merge_tag(tag_dir: str | Path) -> dict[str, torch.Tensor]:
    """The consolidated state of a checkpoint tag directory."""
    files = sorted(Path(tag_dir).glob("mp_rank_*_model_states.pt"))
    if not files:
        raise FileNotFoundError(f"{tag_dir}: no mp_rank_*_model_states.pt")
    ranks = [torch.load(f, map_location="cpu", weights_only=True)["module"] for f in files]
    names = [n for n, v in ranks[0].items() if isinstance(v, torch.Tensor)]
    return {n: reassemble(n, [r[n] for r in ranks]) for n in names}
