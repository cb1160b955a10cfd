"""In-rank state probe: the full (unsharded) training state of an FSDP run, as digests.

Started in every rank of the run under test (``install``, through the harness library's
observer start-up) and called by the trusted oracle (:class:`SourceProbe` directly). Before the
first update it gathers the model FSDP sharded; after update ``steps`` the parameters, buffers,
gradients and optimizer state. Each rank records its RNG state and digests of the model it
gathered; rank 0 also every entry's digest and per-row fingerprints of the initial model. The
oracle keeps its final parameters too (for distances). Inside a run this code runs in the
revision's processes, so the judge checks what it writes against the saved weights and the
oracle, never takes it on trust.
"""
from __future__ import annotations

import hashlib
from typing import Any

import torch
from rank_observer import RankObserver  # the harness library's observer base (on the job's path)
from torch import nn
from torch.distributed.tensor import DTensor

Tensors = dict[str, torch.Tensor]
FIELDS = ("init", "params", "buffers", "grads", "opt")


def full(value: torch.Tensor) -> torch.Tensor:
    """An unsharded CPU copy (collective for a DTensor)."""
    return (value.full_tensor() if isinstance(value, DTensor) else value).detach().to("cpu", copy=True)


def parameters(root: nn.Module, grads: bool = False) -> Tensors:
    """Every parameter (or its gradient) of the unsharded model."""
    out = {name: p.grad if grads else p for name, p in root.named_parameters()}
    return {name: full(v) for name, v in out.items() if v is not None}


def optimizer_state(root: nn.Module, optimizer: torch.optim.Optimizer) -> dict[str, Any]:
    """The optimizer state gathered to full tensors as ``<param>.<slot>``, and each group's settings."""
    from torch.distributed.checkpoint.state_dict import StateDictOptions, get_optimizer_state_dict  # noqa: PLC0415

    sd = get_optimizer_state_dict(root, optimizer, options=StateDictOptions(full_state_dict=True))
    flat = {f"{p}.{slot}": full(v) if torch.is_tensor(v) else v for p, slots in sd["state"].items()
            for slot, v in slots.items()}  # fmt: skip
    for i, group in enumerate(sd["param_groups"]):
        flat |= {f"group{i}.{k}": group[k] for k in ("lr", "betas", "eps", "weight_decay") if k in group}
    return flat


def value_digest(value: Any) -> str:
    """sha256 of a tensor's dtype, shape and bytes, or of a plain value's repr."""
    h = hashlib.sha256()
    if torch.is_tensor(value):
        h.update(f"{value.dtype}|{tuple(value.shape)}|".encode())
        h.update(value.detach().cpu().contiguous().reshape(-1).view(torch.uint8).numpy().tobytes())
    else:
        h.update(repr(value).encode())
    return h.hexdigest()


def combined(entries: dict[str, str]) -> str:
    """One digest over per-entry digests: equal exactly when every entry is bitwise equal."""
    h = hashlib.sha256()
    for name in sorted(entries):
        h.update(f"{name}|{entries[name]}".encode())
    return h.hexdigest()


def row_fingerprints(t: torch.Tensor) -> torch.Tensor:
    """One int64 per row along dim 0: a fixed random linear form over the row's 32-bit words
    (wrapping), telling which rows of a hybrid came from which source."""
    rows = t.detach().contiguous().reshape(t.shape[0] if t.dim() else 1, -1).view(torch.int32).long()
    coeffs = torch.randint(1, 2**62, (rows.shape[1],), generator=torch.Generator().manual_seed(0x5EED))
    return (rows * coeffs).sum(dim=1)


class SourceProbe(RankObserver):
    """Records the state described above once, after update ``steps``."""

    def __init__(self, *args: Any, keep_params: bool = False) -> None:
        super().__init__(*args)
        self.init: Tensors | None = None
        self.keep_params = keep_params

    def on_step_pre(self, optimizer: torch.optim.Optimizer, step: int) -> None:
        if step == 0 and self.root is not None:
            self.capture_initial(self.root)

    def on_step_post(self, optimizer: torch.optim.Optimizer, step: int) -> None:
        if step + 1 == self.steps and self.root is not None and self.init is not None:
            self.capture_final(self.root, optimizer)

    def capture_initial(self, root: nn.Module) -> None:
        """The model as assembled for training (collective)."""
        self.init = parameters(root)

    def capture_final(self, root: nn.Module, optimizer: torch.optim.Optimizer) -> None:
        """The state after the last update (collective), then the record."""
        assert self.init is not None, "capture_initial runs first"
        buffers = {name: full(b) for name, b in root.named_buffers()}
        state = {"init": self.init, "params": parameters(root), "buffers": buffers,
                 "grads": parameters(root, grads=True), "opt": optimizer_state(root, optimizer)}  # fmt: skip
        # every rank's two combined digests; rank 0 alone records every entry's
        fields = FIELDS if self.rank == 0 else ("init", "params")
        digests = {f: {name: value_digest(v) for name, v in state[f].items()} for f in fields}
        record: dict[str, Any] = {"rng": torch.get_rng_state(), "init_digest": combined(digests["init"]),
                                  "final_digest": combined(digests["params"])}  # fmt: skip
        if self.rank == 0:
            record |= {"digests": digests, "init_rows": {n: row_fingerprints(t) for n, t in self.init.items()}}
            if self.keep_params:
                record["params"] = state["params"]
        self.write(record)


def install() -> None:
    """Observer start-up in a rank of the run under test (settings from the job's environment)."""
    probe = SourceProbe.from_env()
    if probe is not None:
        probe.install(forward=True, steps=True)
