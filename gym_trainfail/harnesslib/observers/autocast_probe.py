"""Which autocast a rank's code is running under, seen through torch's own autocast class.

``torch.autocast``, ``torch.amp.autocast`` and ``torch.cpu.amp.autocast`` are all
``torch.amp.autocast_mode.autocast``; :meth:`AutocastProbe.install` wraps its ``__enter__`` and
``__exit__`` so that every entered autocast is known, however the workspace enters it (a
``with``, nested ``with`` statements, an ``ExitStack``, a helper returning the context), and
:meth:`AutocastProbe.state` says which one is in force: ``"<device>:<dtype>"`` of the innermost
entered autocast when it is enabled (as real autocasts nest), else ``"off"``.

``record_only`` names device types whose autocast is recorded but not applied (``nullcontext``
semantics): for a precision a CPU rank cannot run (megatron-core's linear layers cast for CUDA
autocast only), the scenario can still see that the code asked for it while its numbers stay
float32. Every other device type's autocast runs for real. Runs inside the revision's process,
so what it reports is a claim the judge weighs as such.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import torch

#: The state outside any entered, enabled autocast.
OFF = "off"


class AutocastProbe:
    """The stack of entered autocasts (device type, dtype, enabled)."""

    def __init__(self, record_only: Iterable[str] = ()) -> None:
        self.record_only = frozenset(record_only)
        self.entered: list[tuple[str, str, bool]] = []

    def state(self) -> str:
        """``device:dtype`` of the innermost entered autocast if it is enabled, else ``off``."""
        if not self.entered or not self.entered[-1][2]:
            return OFF
        device, dtype, _ = self.entered[-1]
        return f"{device}:{dtype}"

    def install(self) -> AutocastProbe:
        """Wrap the autocast class's ``__enter__``/``__exit__`` (every alias shares them)."""
        cls = torch.amp.autocast_mode.autocast
        real_enter, real_exit = cls.__enter__, cls.__exit__
        entered, record_only = self.entered, self.record_only

        def enter(ctx: Any) -> Any:
            entered.append((str(ctx.device), str(ctx.fast_dtype).removeprefix("torch."), bool(ctx._enabled)))
            return ctx if ctx.device in record_only else real_enter(ctx)

        def leave(ctx: Any, *exc: Any) -> Any:
            if entered:
                entered.pop()
            return False if ctx.device in record_only else real_exit(ctx, *exc)

        cls.__enter__ = enter  # type: ignore[method-assign]
        cls.__exit__ = leave  # type: ignore[method-assign]
        return self
