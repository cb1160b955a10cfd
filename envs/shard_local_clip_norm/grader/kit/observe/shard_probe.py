"""In each rank: the parameter values this rank's optimizer holds after the last update.

Under FSDP (``FullyShardedDataParallel``) each rank holds a shard of every flat parameter; the
probe walks the FSDP units of the wrapped model and records, for every original parameter with
entries in the local shard, its fully qualified name, the first flat index it covers and the
values. Without FSDP units it records every named parameter whole. The record is written at the
watched optimizer's last step (``TRAINFAIL_OBSERVE_STEPS`` steps) with the number of training
forwards seen so far.
"""
from __future__ import annotations

from pathlib import Path

import torch
from rank_observer import RankObserver, cpu32  # the harness library's observer base

FSDP = "FullyShardedDataParallel"
WRAPPED = "_fsdp_wrapped_module"


def clean(name: str) -> str:
    return ".".join(part for part in name.split(".") if part and part != WRAPPED)


class ShardProbe(RankObserver):
    def __init__(self, out_dir: Path, steps: int, rank: int, world: int) -> None:
        super().__init__(out_dir, steps, rank, world)
        self.wrapper: torch.nn.Module | None = None
        self.forwards = 0

    def on_root_forward(self, module: torch.nn.Module, args) -> None:
        if self.wrapper is None and type(module).__name__ == FSDP:
            self.wrapper = module
        if module.training:
            self.forwards += 1

    def pieces(self) -> list[dict]:
        out: list[dict] = []
        if self.wrapper is not None:
            for name, unit in self.wrapper.named_modules():
                handle = getattr(unit, "_handle", None) if type(unit).__name__ == FSDP else None
                if handle is None:
                    continue
                flat, prefix = handle.flat_param, clean(name)
                for fqn, info in zip(flat._fqns, flat._shard_param_infos):
                    if not info.in_shard:
                        continue
                    values = flat.detach()[info.offset_in_shard:info.offset_in_shard + info.numel_in_shard]
                    out.append({"name": f"{prefix}.{fqn}" if prefix else fqn,
                                "start": int(info.intra_param_start_idx), "values": cpu32(values)})
            return out
        model = self.model()
        for name, param in (model.named_parameters() if model is not None else []):
            out.append({"name": name, "start": 0, "values": cpu32(param).reshape(-1)})
        return out

    def on_step_post(self, optimizer: torch.optim.Optimizer, step: int) -> None:
        if step == self.steps - 1:
            self.write({"optimizer_steps": step + 1, "forwards": self.forwards, "pieces": self.pieces()})


def start() -> None:
    observer = ShardProbe.from_env()
    if observer is not None:
        observer.install()
