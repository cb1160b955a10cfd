"""Checkpoints: ``OUTPUT_DIR/RUN_NAME/checkpoint-STEP/`` holding

* ``model.pt``: the model's state dict (unwrapped, float32);
* ``optimizer.pt``: the optimizer's state dict (SGD momentum buffers);
* ``trainer_state.json``: ``{"global_step": int, "epoch": int}``;
* ``rng_state_RANK.pth``: each rank's torch RNG state.

Rank 0 writes the shared files; every rank writes its RNG state.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist


def checkpoint_dir(cfg: dict, step: int) -> Path:
    """Where the checkpoint of ``step`` goes."""
    return Path(cfg["output_dir"]) / cfg["run_name"] / f"checkpoint-{step}"


def save_checkpoint(folder: Path, model: torch.nn.Module, optimizer: torch.optim.Optimizer,
                    global_step: int, epoch: int, rank: int) -> None:
    """Write one checkpoint (collective: every rank must call it)."""
    if rank == 0:
        folder.mkdir(parents=True, exist_ok=True)
        torch.save(model.state_dict(), folder / "model.pt")
        torch.save(optimizer.state_dict(), folder / "optimizer.pt")
        (folder / "trainer_state.json").write_text(
            json.dumps({"global_step": global_step, "epoch": epoch}) + "\n", encoding="utf-8")
    dist.barrier()
    torch.save(torch.get_rng_state(), folder / f"rng_state_{rank}.pth")
    dist.barrier()


def load_checkpoint(folder: Path, model: torch.nn.Module, optimizer: torch.optim.Optimizer) -> dict[str, Any]:
    """Restore model and optimizer from ``folder``; return its trainer state."""
    model.load_state_dict(torch.load(folder / "model.pt", map_location="cpu", weights_only=True))
    optimizer.load_state_dict(torch.load(folder / "optimizer.pt", map_location="cpu", weights_only=True))
    state: dict[str, Any] = json.loads((folder / "trainer_state.json").read_text(encoding="utf-8"))
    return state
