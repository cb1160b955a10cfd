"""Record, on every rank, how the MoE layers the pipeline trains are laid out.

One global module forward pre-hook (torch's, so nothing depends on how the workspace is
organised): every forward of a DeepSpeed ``MoE`` module (``deepspeed.moe.layer.MoE``)
counts, with the layer's ``ep_size``, its number of local experts and the size of the process
group its all-to-all runs over. After ``TRAINFAIL_OBSERVE_STEPS`` MoE forwards each rank
writes ``rank<R>.json`` (atomically) into ``TRAINFAIL_OBSERVE_DIR``:
``{"format", "rank", "world", "forwards", "layers": [{"ep_size", "local_experts",
"ep_group_size"}]}`` (one entry per distinct layout seen).

It runs inside the revision's processes, so the judge treats it as a claim: it only shows that
expert parallelism was not switched off; every number the verdict rests on comes from the
judge's own reference.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from torch import nn
from torch.nn.modules.module import register_module_forward_pre_hook

RECORD_FORMAT = 1


class LayoutObserver:
    """Counts MoE forwards and the layouts they ran with."""

    def __init__(self, out_dir: Path, steps: int) -> None:
        self.out_dir = out_dir
        self.steps = steps
        self.forwards = 0
        self.layouts: list[dict[str, int]] = []
        self.written = False

    def on_forward_pre(self, module: nn.Module, args: tuple[Any, ...]) -> None:
        """Count a forward of a DeepSpeed MoE layer and note its layout."""
        if self.written or type(module).__name__ != "MoE" or not type(module).__module__.startswith("deepspeed."):
            return
        import torch.distributed as dist  # noqa: PLC0415 - only once training runs

        inner = getattr(module, "deepspeed_moe", None)
        group = getattr(inner, "ep_group", None)
        layout = {
            "ep_size": int(getattr(module, "ep_size", -1)),
            "local_experts": int(getattr(module, "num_local_experts", -1)),
            "ep_group_size": dist.get_world_size(group=group) if group is not None else -1,
        }
        if layout not in self.layouts:
            self.layouts.append(layout)
        self.forwards += 1
        if self.forwards >= self.steps:
            self._write(dist.get_rank(), dist.get_world_size())

    def _write(self, rank: int, world: int) -> None:
        record = {"format": RECORD_FORMAT, "rank": rank, "world": world, "forwards": self.forwards,
                  "layers": self.layouts}
        self.out_dir.mkdir(parents=True, exist_ok=True)
        tmp = self.out_dir / f".rank{rank}.json.tmp"
        tmp.write_text(json.dumps(record), encoding="utf-8")
        os.replace(tmp, self.out_dir / f"rank{rank}.json")
        self.written = True


def install_from_env() -> None:
    """Register the hook if ``TRAINFAIL_OBSERVE_DIR`` is set (idempotent per process)."""
    out = os.environ.get("TRAINFAIL_OBSERVE_DIR")
    if not out or getattr(install_from_env, "installed", False):
        return
    observer = LayoutObserver(Path(out), int(os.environ.get("TRAINFAIL_OBSERVE_STEPS", "1")))
    register_module_forward_pre_hook(observer.on_forward_pre)
    install_from_env.installed = True  # type: ignore[attr-defined]
