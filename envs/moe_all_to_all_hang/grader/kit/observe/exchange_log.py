"""In every rank: the all-to-all exchanges the rank took part in (a claim, not a measurement).

Wraps ``torch.distributed.all_to_all_single`` (DeepSpeed's communication backend looks it up at
each call) to count, per optimizer step, the calls and the size of the group each ran over. After
``TRAINFAIL_OBSERVE_STEPS`` optimizer steps the rank writes ``rank<R>.pt`` (the SDK's record):
``{"calls": [calls of step 0, ...], "group_sizes": sorted distinct group sizes}``. It runs in the
revision's process: the judge uses it only to see that the experts' tokens were exchanged at all
(expert parallelism not switched off); every number a verdict rests on is the judge's own.
"""

from __future__ import annotations

import functools
from typing import Any

import torch
import torch.distributed as dist
from rank_observer import RankObserver  # the harness library's observer base


class ExchangeLog(RankObserver):
    """Counts all-to-all calls per optimizer step."""

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.current = 0
        self.calls: list[int] = []
        self.sizes: set[int] = set()

    def wrap(self) -> None:
        original = dist.all_to_all_single

        @functools.wraps(original)
        def counted(*args: Any, **kwargs: Any) -> Any:
            if not self.written:
                group = kwargs.get("group", args[4] if len(args) > 4 else None)
                self.current += 1
                self.sizes.add(int(dist.get_world_size(group=group)))
            return original(*args, **kwargs)

        dist.all_to_all_single = counted

    def on_step_post(self, optimizer: torch.optim.Optimizer, step: int) -> None:
        self.calls.append(self.current)
        self.current = 0
        if len(self.calls) >= self.steps:
            self.write({"calls": list(self.calls), "group_sizes": sorted(self.sizes)})


def install() -> None:
    """Start the observer in this rank when the job is observed."""
    observer = ExchangeLog.from_env()
    if observer is not None:
        observer.wrap()
        observer.install(forward=False, steps=True)
