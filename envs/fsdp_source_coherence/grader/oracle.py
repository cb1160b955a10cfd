"""Trusted same-topology oracle: the documented recipe with every rank loading one source.

    torchrun --standalone --nproc_per_node=N oracle.py --published TMP --out DIR \
        [--steps S --micro-batch-size B --seq-len L]

Started by oracle_job.py (grader.oracle_command); it never runs revision code. Rank 0 first
publishes both authentic sources into `TMP/{A,B}`. Then, for each source in turn and inside
this one launch (process start-up is most of the cost), every rank loads that source with the
plain Hugging Face loader, shards it as the workspace does, runs the recipe and writes its
probe record, tensors included, to `DIR/<source>/rank<r>.pt`. The training's length and shape
(updates, per-rank micro-batch size, sequence length) are the scenario's (`layout.Train`, passed
by oracle_job.py); they default to the grader's own (recipe.py).
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

KIT = Path(__file__).resolve().parent / "kit"
sys.path[:0] = [str(KIT), str(KIT / "observer")]

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
from torch.distributed.device_mesh import DeviceMesh, init_device_mesh  # noqa: E402
from torch.distributed.fsdp import fully_shard  # noqa: E402

import layout  # noqa: E402
import recipe  # noqa: E402
import sources  # noqa: E402
import trainfail_probe  # noqa: E402


def load_source(folder: Path, device: torch.device) -> torch.nn.Module:
    """The source checkpoint as the recipe uses it: recipe dropout, train mode."""
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(
        folder, hidden_dropout=recipe.HIDDEN_DROPOUT, attention_dropout=recipe.ATTENTION_DROPOUT
    )
    return model.train().to(device)


def shard(model: torch.nn.Module, mesh: DeviceMesh) -> torch.nn.Module:
    """FSDP2 units as the workspace documents: each transformer block, then the root."""
    for block in model.gpt_neox.layers:
        fully_shard(block, mesh=mesh)
    fully_shard(model, mesh=mesh)
    return model


def run_recipe(model: torch.nn.Module, rank: int, device: torch.device, train: layout.Train) -> torch.optim.Optimizer:
    """`train.steps` AdamW updates on (micro_batch_size, seq_len) batches, with the per-rank data
    and dropout streams of the recipe."""
    optimizer = torch.optim.AdamW(
        model.parameters(), lr=recipe.LR, betas=recipe.BETAS, eps=recipe.EPS, weight_decay=recipe.WEIGHT_DECAY
    )
    data = torch.Generator().manual_seed(recipe.SEED + rank)
    torch.manual_seed(recipe.SEED + 1000 * (rank + 1))
    for _ in range(train.steps):
        shape = (train.micro_batch_size, train.seq_len)
        input_ids = torch.randint(0, model.config.vocab_size, shape, generator=data).to(device)
        optimizer.zero_grad(set_to_none=True)
        model(input_ids=input_ids, labels=input_ids).loss.backward()
        optimizer.step()
    return optimizer


def oracle_for(source: str, published: Path, out: Path, mesh: DeviceMesh, device: torch.device,
               train: layout.Train) -> None:
    """One single-source run, recorded like the run under test."""
    started = time.time()
    model = shard(load_source(published / source, device), mesh)
    init = trainfail_probe.capture_initial(model)
    optimizer = run_recipe(model, dist.get_rank(), device, train)
    final = trainfail_probe.capture_final(model, optimizer)
    timing = {"started": started, "captured": time.time()}
    trainfail_probe.write_record(out / source, init, final, timing, keep_tensors=True)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--published", type=Path, required=True, help="scratch folder for the sources")
    parser.add_argument("--out", type=Path, required=True, help="the oracle records, one folder per source")
    parser.add_argument("--steps", type=int, default=recipe.STEPS, help="AdamW updates")
    parser.add_argument("--micro-batch-size", type=int, default=recipe.MICRO_BATCH_SIZE, help="rows per rank")
    parser.add_argument("--seq-len", type=int, default=recipe.SEQ_LEN, help="tokens per row")
    args = parser.parse_args()
    # Validated like a request's `train` param (the bounds of layout.TRAIN_LIMITS).
    train = layout.parse_train(
        {"steps": args.steps, "micro_batch_size": args.micro_batch_size, "seq_len": args.seq_len}
    )
    backend = os.environ.get("TRAINFAIL_BACKEND", "gloo")
    dist.init_process_group(backend)
    device = torch.device("cpu")
    if backend == "nccl":
        device = torch.device("cuda", int(os.environ["LOCAL_RANK"]))
        torch.cuda.set_device(device)
    if dist.get_rank() == 0:
        sources.publish(args.published)
    dist.barrier()
    mesh = init_device_mesh(device.type, (dist.get_world_size(),))
    for source in sources.SOURCES:
        oracle_for(source, args.published, args.out, mesh, device, train)
    dist.barrier()
    dist.destroy_process_group()
    sys.stdout.flush()
    sys.stderr.flush()
    # Records are on disk; skip interpreter teardown, where gloo in torch 2.13 can abort.
    os._exit(0)


if __name__ == "__main__":
    main()
