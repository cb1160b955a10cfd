"""Entry point: `torchrun --nproc_per_node=N -m ftpipe.train --config CONFIG [key=value ...]`."""
from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import time
from pathlib import Path

import torch
import torch.distributed as dist
from torch.distributed.checkpoint.state_dict import StateDictOptions, get_model_state_dict
from torch.distributed.device_mesh import init_device_mesh

from ftpipe.config import Config, load_config
from ftpipe.data import token_batches
from ftpipe.modeling import load_base_model, parameter_count, shard_model

log = logging.getLogger("ftpipe")


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """Command line: a config file and any number of section.key=value overrides."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--config", required=True, help="YAML run configuration")
    parser.add_argument("overrides", nargs="*", help="section.key=value overrides")
    return parser.parse_args(argv)


def init_distributed() -> torch.device:
    """Join the process group (backend from TRAINFAIL_BACKEND) and pick this rank's device."""
    backend = os.environ.get("TRAINFAIL_BACKEND", "gloo")
    dist.init_process_group(backend)
    if backend == "nccl":
        device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", "0")))
        torch.cuda.set_device(device)
        return device
    return torch.device("cpu")


def build_optimizer(model: torch.nn.Module, cfg: Config) -> torch.optim.Optimizer:
    """AdamW over the sharded parameters."""
    t = cfg.train
    return torch.optim.AdamW(
        model.parameters(), lr=t.lr, betas=(t.betas[0], t.betas[1]), eps=t.eps,
        weight_decay=t.weight_decay,
    )


def train(model: torch.nn.Module, cfg: Config, rank: int, device: torch.device, out_dir: Path) -> None:
    """Run `train.steps` AdamW updates; rank 0 appends one JSON line per step to metrics.jsonl."""
    optimizer = build_optimizer(model, cfg)
    batches = token_batches(
        model.config.vocab_size, cfg.train.micro_batch_size, cfg.train.seq_len, seed=cfg.train.seed + rank
    )
    # One dropout stream per rank, seeded right before the loop so a run is reproducible
    # from train.seed alone.
    torch.manual_seed(cfg.train.seed + 1000 * (rank + 1))
    metrics = (out_dir / "metrics.jsonl").open("a") if rank == 0 else None
    for step in range(1, cfg.train.steps + 1):
        started = time.perf_counter()
        input_ids = next(batches).to(device)
        optimizer.zero_grad(set_to_none=True)
        loss = model(input_ids=input_ids, labels=input_ids).loss
        loss.backward()
        optimizer.step()
        if metrics is not None:
            record = {"step": step, "loss": loss.item(), "step_s": round(time.perf_counter() - started, 4)}
            metrics.write(json.dumps(record) + "\n")
            log.info("step %d loss %.4f", step, record["loss"])
    if metrics is not None:
        metrics.close()


def save_final(model: torch.nn.Module, out_dir: Path, rank: int) -> None:
    """Gather the full weights onto rank 0 and write them as a Hugging Face checkpoint."""
    state = get_model_state_dict(model, options=StateDictOptions(full_state_dict=True, cpu_offload=True))
    if rank == 0:
        model.save_pretrained(out_dir / "final", state_dict=state)
        log.info("saved final weights to %s", out_dir / "final")


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    cfg = load_config(args.config, args.overrides)
    device = init_distributed()
    rank, world = dist.get_rank(), dist.get_world_size()
    logging.basicConfig(
        level=logging.INFO if rank == 0 else logging.WARNING,
        format=f"[rank{rank}] %(asctime)s %(name)s: %(message)s",
    )
    out_dir = Path(cfg.output.dir)
    out_dir.mkdir(parents=True, exist_ok=True)

    model = load_base_model(cfg, rank).to(device)
    mesh = init_device_mesh(device.type, (world,))
    model = shard_model(model, mesh)
    if rank == 0:
        log.info("%d parameters, FSDP over %d ranks", parameter_count(model), world)

    train(model, cfg, rank, device, out_dir)
    if cfg.output.save_final:
        save_final(model, out_dir, rank)
    dist.barrier()
    dist.destroy_process_group()
    sys.stdout.flush()
    sys.stderr.flush()
    # gloo in torch 2.13 occasionally aborts during interpreter teardown after all work is
    # done; everything is written by now, so leave without it.
    os._exit(0)


if __name__ == "__main__":
    main()
