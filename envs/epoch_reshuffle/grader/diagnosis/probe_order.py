"""Probe: does each epoch's loader yield the order the README specifies?

Builds the pipeline's own loader (wristnet.batching.make_loader) for ranks 0 and 1 of 2 from the
shipped config's table, calls the loop's own begin_epoch before each of 3 epochs, and prints the
sum of each epoch's first batch beside the one DistributedSampler(seed, drop_last) gives after
set_epoch(epoch), labelled loader / specified.

    python outputs/probe_order.py
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import torch
from torch.utils.data import DistributedSampler

sys.path.insert(0, str(Path.cwd()))

from wristnet.batching import make_loader  # noqa: E402
from wristnet.fit import begin_epoch  # noqa: E402
from wristnet.settings import load  # noqa: E402

WORLD, EPOCHS = 2, 3


def main() -> None:
    cfg = load("configs/cpu.toml")
    data = cfg["data"]
    if not Path(data["table"]).is_file():
        subprocess.run([sys.executable, "-m", "wristnet.make_data", "--config", "configs/cpu.toml"], check=True)
    table = torch.load(data["table"], weights_only=True)
    windows = table["windows"].double()
    for rank in range(WORLD):
        loader = make_loader(table, data["batch_size"], num_replicas=WORLD, rank=rank, seed=data["shuffle_seed"],
                             drop_last=data["drop_last"])
        print(f"rank {rank}: loader.sampler is {type(loader.sampler).__name__}, "
              f"loader.batch_sampler is {type(loader.batch_sampler).__name__}")
        for epoch in range(EPOCHS):
            begin_epoch(loader, epoch)
            got, _ = next(iter(loader))
            spec = DistributedSampler(range(len(windows)), num_replicas=WORLD, rank=rank, shuffle=True,
                                      seed=data["shuffle_seed"], drop_last=data["drop_last"])
            spec.set_epoch(epoch)
            first = list(spec)[: data["batch_size"]]
            print(f"loader epoch {epoch} rank {rank} first_batch_sum={got.double().sum().item():.12g}")
            print(f"specified epoch {epoch} rank {rank} first_batch_sum={windows[first].sum().item():.12g}")


if __name__ == "__main__":
    main()
