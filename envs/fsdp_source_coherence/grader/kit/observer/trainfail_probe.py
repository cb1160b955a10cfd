"""State probe: captures the full (unsharded) training state of a multi-rank run.

Used two ways:
  * injected into the pipeline under test by the run kit (`install`, from the warm launcher's
    setup hook or `sitecustomize`): global module/optimizer hooks find the root module and
    the optimizer without touching its code;
  * called directly by the trusted oracle run (`capture_initial`, `capture_final`).

Each rank writes `<dir>/rank<r>.pt` atomically. Every record holds the rank's RNG state and
digests of the model it gathered (replica check); rank 0's also holds the full state as
per-entry digests and per-row fingerprints of the initial parameters (which rows came from
which source). Only the oracle keeps tensors (`keep_tensors`): a run's record is about 1 MB,
and the judge reads the run's final parameters from the pipeline's own saved weights.

Inside a run under test this module runs in the revision's processes, so the judge treats
what it writes as a claim to check, never as a verdict.
"""
from __future__ import annotations

import hashlib
import os
import time
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist
from torch import nn
from torch.distributed.tensor import DTensor
from torch.utils.hooks import RemovableHandle

Tensors = dict[str, torch.Tensor]

# Wrapper prefixes that FSDP1, activation checkpointing, torch.compile and DDP add to names.
_WRAPPER_TOKENS = ("_fsdp_wrapped_module.", "_checkpoint_wrapped_module.", "_orig_mod.")


def clean_name(name: str) -> str:
    """Parameter name as the unwrapped Hugging Face model spells it."""
    for token in _WRAPPER_TOKENS:
        name = name.replace(token, "")
    return name.removeprefix("module.")


def _full(t: torch.Tensor) -> torch.Tensor:
    """Unsharded CPU copy of a (possibly DTensor) tensor. Collective for DTensors."""
    if isinstance(t, DTensor):
        t = t.full_tensor()
    return t.detach().to("cpu", copy=True)


def _is_fsdp1(root: nn.Module) -> bool:
    from torch.distributed.fsdp import FullyShardedDataParallel

    return isinstance(root, FullyShardedDataParallel)


def full_parameters(root: nn.Module, grads: bool = False) -> Tensors:
    """Every parameter (or its gradient) of the unsharded model, keyed by clean name."""
    if _is_fsdp1(root):
        from torch.distributed.fsdp import FullyShardedDataParallel

        with FullyShardedDataParallel.summon_full_params(root, writeback=False, with_grads=grads):
            return _collect(root, grads)
    return _collect(root, grads)


def _collect(root: nn.Module, grads: bool) -> Tensors:
    out: Tensors = {}
    for name, param in root.named_parameters():
        value = param.grad if grads else param
        if value is not None:
            out[clean_name(name)] = _full(value)
    return out


def full_buffers(root: nn.Module) -> Tensors:
    """Every buffer (FSDP keeps buffers unsharded), keyed by clean name."""
    return {clean_name(n): _full(b) for n, b in root.named_buffers()}


def full_optimizer_state(root: nn.Module, optimizer: torch.optim.Optimizer) -> dict[str, Any]:
    """Optimizer state gathered to full tensors, flattened to `<param>.<slot>` keys, plus
    the numeric hyper-parameters of every parameter group."""
    from torch.distributed.checkpoint.state_dict import StateDictOptions, get_optimizer_state_dict

    sd = get_optimizer_state_dict(root, optimizer, options=StateDictOptions(full_state_dict=True))
    flat: dict[str, Any] = {}
    for param, slots in sd["state"].items():
        for slot, value in slots.items():
            key = f"{clean_name(str(param))}.{slot}"
            flat[key] = _full(value) if torch.is_tensor(value) else value
    for i, group in enumerate(sd["param_groups"]):
        for hp in ("lr", "betas", "eps", "weight_decay"):
            if hp in group:
                flat[f"group{i}.{hp}"] = _full(group[hp]) if torch.is_tensor(group[hp]) else group[hp]
    return flat


def digest(tensors: Tensors) -> str:
    """sha256 over names, shapes, dtypes and bytes: equal digests mean bitwise-equal models."""
    h = hashlib.sha256()
    for name in sorted(tensors):
        h.update(f"{name}|".encode())
        h.update(value_digest(tensors[name]).encode())
    return h.hexdigest()


def value_digest(value: Any) -> str:
    """sha256 of one tensor (dtype, shape, bytes) or of the repr of a plain value."""
    h = hashlib.sha256()
    if torch.is_tensor(value):
        h.update(f"{value.dtype}|{tuple(value.shape)}|".encode())
        h.update(value.detach().cpu().contiguous().reshape(-1).view(torch.uint8).numpy().tobytes())
    else:
        h.update(repr(value).encode())
    return h.hexdigest()


def field_digests(fields: dict[str, dict[str, Any]]) -> dict[str, dict[str, str]]:
    """Per-entry digests of every state field: bitwise comparison without keeping the tensors."""
    return {name: {key: value_digest(v) for key, v in entries.items()} for name, entries in fields.items()}


def row_fingerprints(t: torch.Tensor) -> torch.Tensor:
    """One int64 per row along dim 0 (per element of a 1-D tensor, one for a scalar): a fixed
    random linear form over the row's bits, wrapping mod 2**64. Equal rows give equal values;
    used only to tell a row-wise hybrid of two sources from a tensor of neither."""
    x = t.detach().to("cpu").contiguous()
    rows = x.reshape(x.shape[0] if x.dim() else 1, -1)
    words = (rows.view(torch.int32) if rows.element_size() == 4 else rows.view(torch.uint8)).long()
    coeffs = torch.randint(1, 2**62, (words.shape[1],), generator=torch.Generator().manual_seed(0x5EED))
    return (words * coeffs).sum(dim=1)


def capture_initial(root: nn.Module) -> Tensors:
    """The model as assembled for training, before any update. Collective."""
    return full_parameters(root)


def capture_final(root: nn.Module, optimizer: torch.optim.Optimizer) -> dict[str, Any]:
    """Parameters, buffers, gradients and optimizer state after the last update. Collective."""
    return {
        "params": full_parameters(root),
        "buffers": full_buffers(root),
        "grads": full_parameters(root, grads=True),
        "opt": full_optimizer_state(root, optimizer),
    }


def write_record(
    out_dir: Path, init: Tensors, final: dict[str, Any], timing: dict[str, float], keep_tensors: bool = False
) -> None:
    """Write this rank's record, atomically.

    Rank 0 adds the full state as per-entry digests and the initial parameters' per-row
    fingerprints; with `keep_tensors` (the oracle) also the initial and final parameters
    themselves, for provenance and distances.
    """
    rank = dist.get_rank()
    record: dict[str, Any] = {
        "rank": rank,
        "world": dist.get_world_size(),
        "rng": torch.get_rng_state(),
        "init_digest": digest(init),
        "final_digest": digest(final["params"]),
        "timing": timing,
    }
    if rank == 0:
        record["digests"] = field_digests({"init": init, **final})
        record["init_rows"] = {name: row_fingerprints(t) for name, t in init.items()}
        if keep_tensors:
            record["state"] = {"init": init, "params": final["params"]}
    out_dir.mkdir(parents=True, exist_ok=True)
    tmp = out_dir / f".rank{rank}.pt.tmp"
    torch.save(record, tmp)
    os.replace(tmp, out_dir / f"rank{rank}.pt")


class _Probe:
    """Hook state for one observed process."""

    def __init__(self, out_dir: Path, steps: int) -> None:
        self.out_dir = out_dir
        self.steps = steps
        self.root: nn.Module | None = None
        self.init: Tensors | None = None
        self.done = 0
        self.timing: dict[str, float] = {"process_start": time.time()}
        self.forward_handle: RemovableHandle | None = None

    def on_forward(self, module: nn.Module, args: Any) -> None:
        # Global pre-hooks fire outermost first, so the first module entered is the root.
        self.root = module
        self.timing["first_forward"] = time.time()
        if self.forward_handle is not None:
            self.forward_handle.remove()

    def before_step(self, optimizer: torch.optim.Optimizer, args: Any, kwargs: Any) -> None:
        if self.done == 0 and self.init is None and self.root is not None:
            self.init = capture_initial(self.root)

    def after_step(self, optimizer: torch.optim.Optimizer, args: Any, kwargs: Any) -> None:
        self.done += 1
        if self.done != self.steps or self.root is None or self.init is None:
            return
        self.timing["last_step_done"] = time.time()
        final = capture_final(self.root, optimizer)
        self.timing["captured"] = time.time()
        write_record(self.out_dir, self.init, final, self.timing)


def install() -> None:
    """Hook the current process (a torchrun worker) as configured by the environment."""
    from torch.nn.modules.module import register_module_forward_pre_hook
    from torch.optim.optimizer import register_optimizer_step_post_hook, register_optimizer_step_pre_hook

    probe = _Probe(Path(os.environ["TRAINFAIL_PROBE_DIR"]), int(os.environ.get("TRAINFAIL_PROBE_STEPS", "2")))
    probe.forward_handle = register_module_forward_pre_hook(probe.on_forward)
    register_optimizer_step_pre_hook(probe.before_step)
    register_optimizer_step_post_hook(probe.after_step)
