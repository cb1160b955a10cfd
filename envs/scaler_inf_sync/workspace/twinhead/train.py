"""Trains TwinHead with FSDP on every rank torchrun starts (gloo on CPU ranks)."""
from __future__ import annotations

import json
import os
from pathlib import Path

import torch
import torch.distributed as dist
from torch.distributed.fsdp import FullStateDictConfig, FullyShardedDataParallel, StateDictType

from twinhead import settings
from twinhead.data import load_table, micro_batch
from twinhead.model import TwinHead
from twinhead.prepare import make_table
from twinhead.scaling import ShardScaler

def build_model(cfg: dict) -> TwinHead:
    torch.manual_seed(cfg["seed"])
    model = TwinHead(cfg["model"]["features"], cfg["model"]["hidden"])
    if cfg["model"]["init"]:
        model.load_state_dict(torch.load(cfg["model"]["init"], map_location="cpu", weights_only=True))
    # every rank starts from rank 0's weights (FSDP cannot sync module states on CPU)
    for tensor in model.state_dict().values():
        dist.broadcast(tensor, src=0)
    return model


def main() -> None:
    cfg = settings.load()
    dist.init_process_group(os.environ.get("TRAINFAIL_BACKEND", "gloo"))
    rank, world = dist.get_rank(), dist.get_world_size()
    out_dir = Path(cfg["output"]["dir"])
    out_dir.mkdir(parents=True, exist_ok=True)

    data_path = Path(cfg["data"]["path"])
    if rank == 0 and not data_path.exists():
        data_path.parent.mkdir(parents=True, exist_ok=True)
        torch.save(make_table(features=cfg["model"]["features"]), data_path)
    dist.barrier()
    table = load_table(data_path)

    model = FullyShardedDataParallel(build_model(cfg), device_id=torch.device("cpu"))
    optimizer = torch.optim.SGD(model.parameters(), lr=cfg["train"]["lr"])
    sc = cfg["scaler"]
    scaler = ShardScaler(init_scale=sc["init_scale"], growth_factor=sc["growth_factor"],
                         backoff_factor=sc["backoff_factor"], growth_interval=sc["growth_interval"])
    rows = cfg["data"]["rows_per_rank"]

    with open(out_dir / f"rank{rank}.jsonl", "w") as log:
        for step in range(cfg["train"]["steps"]):
            x_demand, x_returns, target = micro_batch(table, step, rank, world, rows)
            optimizer.zero_grad(set_to_none=True)
            with torch.autocast("cpu", dtype=torch.float16):
                prediction = model(x_demand, x_returns)
            loss = torch.nn.functional.mse_loss(prediction.float(), target)
            scaler.scale(loss).backward()
            scale_before = scaler.get_scale()
            scaler.step(optimizer)
            scaler.update()
            scale = scaler.get_scale()
            record = {"step": step, "loss": loss.item(), "scale": scale, "skipped": scale < scale_before}
            log.write(json.dumps(record) + "\n")
            log.flush()
            if rank == 0:
                print(f"step {step:3d}  loss {record['loss']:.4g}  scale {scale:g}"
                      + ("  (skipped)" if record["skipped"] else ""), flush=True)

    policy = FullStateDictConfig(offload_to_cpu=False, rank0_only=True)
    with FullyShardedDataParallel.state_dict_type(model, StateDictType.FULL_STATE_DICT, policy):
        state = model.state_dict()
    if rank == 0:
        torch.save({k: v.detach().clone() for k, v in state.items()}, out_dir / "model.pt")
    dist.barrier()
    dist.destroy_process_group()
    os._exit(0)  # torch 2.13's gloo can abort in static destructors at interpreter exit


if __name__ == "__main__":
    main()
