"""Probe: do all ranks take the same optimizer steps?

Writes a small table whose demand targets hold two extreme rows (steps 2 and 7), then runs the
pipeline's own trainer (twinhead.train, configs/base.toml) on 2 ranks with a global optimizer
step hook, and prints per rank how many optimizer steps actually ran beside how many steps the
rank logged as skipped.

    python outputs/probe_steps.py
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

TABLE = Path("outputs/probe/table.pt")
OUT = Path("outputs/probe")


def write_table() -> None:
    sys.path.insert(0, str(Path.cwd()))
    from twinhead.prepare import make_table

    table = make_table(rows=192, seed=1)
    table["target"][:, :].clamp_(-3, 3)
    for row in (2 * 16 + 1, 7 * 16 + 1):  # rank 0's slice of steps 2 and 7
        table["target"][row, 0] = 2.0e4
    import torch

    TABLE.parent.mkdir(parents=True, exist_ok=True)
    torch.save(table, TABLE)


def rank_main() -> None:
    import torch  # noqa: F401
    from torch.optim.optimizer import register_optimizer_step_post_hook

    rank = int(os.environ["RANK"])
    taken: list[int] = []
    register_optimizer_step_post_hook(lambda opt, args, kwargs: taken.append(1))
    real_exit = os._exit

    def report(code: int) -> None:
        skips = sum(json.loads(line)["skipped"] for line in open(OUT / f"rank{rank}.jsonl"))
        print(f"rank {rank} optimizer_steps={len(taken)} logged_skips={skips}", flush=True)
        real_exit(code)

    os._exit = report
    sys.argv = ["twinhead.train", "--config", "configs/base.toml", f"data.path={TABLE}", f"output.dir={OUT}",
                "train.steps=12"]
    from twinhead import train

    train.main()


if __name__ == "__main__":
    if os.environ.get("RANK") is not None:
        sys.path.insert(0, str(Path.cwd()))
        rank_main()
    else:
        write_table()
        nproc = os.environ.get("NPROC", "2")
        subprocess.run(["torchrun", "--standalone", f"--nproc_per_node={nproc}", __file__], check=True)
