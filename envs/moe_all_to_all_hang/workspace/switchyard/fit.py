"""Training entry point, one process per rank.

    torchrun --standalone --nproc_per_node=2 -m switchyard.fit --config configs/switch2.toml [--set key=value ...]

Outputs under ``<run.output_dir>/<run.name>/``: ``options.json`` and ``metrics.jsonl`` (rank 0),
``final/rank<R>.pt`` (every rank, the flat weight layout of ``weights.py``).
"""
from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import deepspeed
import torch
import torch.distributed as dist
import torch.nn.functional as F
from deepspeed.moe.utils import split_params_into_different_moe_groups_for_optimizer

from switchyard import comm, options, weights
from switchyard.corpus import Corpus
from switchyard.network import TokenModel


def engine_for(model: TokenModel, lr: float) -> deepspeed.DeepSpeedEngine:
    """Plain SGD in a DeepSpeed engine (fp32, ZeRO off, one micro-batch per step); expert
    parameters in their own parameter groups, as DeepSpeed's MoE support expects."""
    groups = split_params_into_different_moe_groups_for_optimizer({"params": list(model.parameters()), "name": "all"})
    optimizer = torch.optim.SGD(groups, lr=lr)
    config = {"train_micro_batch_size_per_gpu": 1, "gradient_accumulation_steps": 1,
              "zero_optimization": {"stage": 0}, "steps_per_print": 1 << 30}
    engine, _, _, _ = deepspeed.initialize(model=model, optimizer=optimizer, config=config)
    return engine


def run(opts: options.Options) -> None:
    ep = opts["parallel.expert_parallel_size"]
    comm.join(ep, opts["moe.num_experts"])
    rank, world = dist.get_rank(), dist.get_world_size()
    out = Path(opts["run.output_dir"]) / opts["run.name"]
    (out / "final").mkdir(parents=True, exist_ok=True)
    model = TokenModel(opts)
    weights.load_initial(model, opts["init.checkpoint"], comm.expert_rank(ep))
    model.to(comm.device())
    engine = engine_for(model, opts["train.lr"])
    corpus = Corpus.read(opts["data.corpus"])
    log = (out / "metrics.jsonl").open("w", encoding="utf-8") if rank == 0 else None
    if rank == 0:
        (out / "options.json").write_text(json.dumps(opts, indent=1) + "\n", encoding="utf-8")
    steps = opts["train.steps"]
    for step in range(steps):
        began = time.perf_counter()
        x, y = corpus.share(step, opts["data.docs_per_step"], rank, world)
        loss = F.mse_loss(engine(x.to(comm.device())), y.to(comm.device()))
        engine.backward(loss)
        engine.step()
        totals = torch.tensor([float(loss.detach()), float(x.shape[0])], dtype=torch.float64)
        dist.all_reduce(totals)
        if log is not None:
            record = {"step": step, "loss": totals[0].item() / world, "tokens": int(totals[1].item()),
                      "step_time_s": time.perf_counter() - began, "wall_time": time.time()}
            log.write(json.dumps(record) + "\n")
            log.flush()
            if step % opts["train.log_every"] == 0 or step == steps - 1:
                print(f"step {step}: loss {record['loss']:.6f} over {record['tokens']} tokens", flush=True)
    if log is not None:
        log.close()
    torch.save(weights.rank_file(model, comm.expert_rank(ep)), out / "final" / f"rank{rank}.pt")
    comm.leave()


def main(argv: list[str] | None = None) -> None:
    cli = argparse.ArgumentParser(description="train the token model with expert parallelism")
    cli.add_argument("--config", help="TOML run options")
    cli.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                     help="override one option (repeatable)")
    args = cli.parse_args(argv)
    run(options.load(args.config, args.overrides))


if __name__ == "__main__":
    main()
