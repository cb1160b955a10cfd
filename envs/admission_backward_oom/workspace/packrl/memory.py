"""Device-memory accounting for one call.

On the accelerator the allocator enforces the budget by itself. Here every call runs under a
``MemoryMeter``: a dispatch mode that counts the bytes of every tensor storage an operation
allocates and releases them when the storage is freed, so ``peak_bytes`` is the largest amount
of call memory live at any moment (parameters and inputs allocated before the call are not
counted). With a budget, the allocation that takes live memory past it raises
``torch.OutOfMemoryError``, as the device allocator would.
"""
from __future__ import annotations

import weakref

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten


class MemoryMeter(TorchDispatchMode):
    """Live and peak bytes of storages allocated inside the ``with`` block."""

    def __init__(self, budget_bytes: int | None = None) -> None:
        super().__init__()
        self.budget_bytes = budget_bytes
        self.live_bytes = 0
        self.peak_bytes = 0
        self._storages: dict[int, int] = {}

    def _release(self, key: int, nbytes: int) -> None:
        if self._storages.pop(key, None) is not None:
            self.live_bytes -= nbytes

    def _track(self, tensor: torch.Tensor) -> None:
        storage = tensor.untyped_storage()
        key = storage._cdata
        if key in self._storages:
            return
        nbytes = storage.nbytes()
        self._storages[key] = nbytes
        self.live_bytes += nbytes
        weakref.finalize(storage, self._release, key, nbytes)
        if self.live_bytes > self.peak_bytes:
            self.peak_bytes = self.live_bytes
            if self.budget_bytes is not None and self.live_bytes > self.budget_bytes:
                raise torch.OutOfMemoryError(
                    f"out of memory: tried to allocate {nbytes} bytes with {self.live_bytes - nbytes} "
                    f"in use; budget {self.budget_bytes} bytes")

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # noqa: ANN001
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        # views and in-place results share an input's storage: nothing new was allocated
        shared = {t.untyped_storage()._cdata for t in tree_flatten((args, kwargs))[0] if isinstance(t, torch.Tensor)}
        for item in tree_flatten(out)[0]:
            if isinstance(item, torch.Tensor) and item.untyped_storage()._cdata not in shared:
                self._track(item)
        return out
