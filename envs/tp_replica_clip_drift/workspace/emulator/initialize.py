"""``initialize_megatron``: process group, tensor-parallel groups, this rank's device.

The collective backend is ``$TRAINFAIL_BACKEND`` (``gloo`` unless set; ``nccl`` puts each rank
on the GPU ``LOCAL_RANK`` names). Every process is one tensor-parallel rank, so the job must be
started with exactly ``tensor_model_parallel_size`` processes.
"""
from __future__ import annotations

import argparse
import os
import sys

import deepspeed
import torch
import torch.distributed as torch_dist
from megatron.core import parallel_state


def initialize_megatron(args: argparse.Namespace) -> None:
    """Join the job's process group and build the groups; sets ``args.rank``, ``args.world_size``
    and ``args.device``."""
    backend = os.environ.get("TRAINFAIL_BACKEND", "gloo")
    deepspeed.init_distributed(dist_backend=backend)
    args.rank, args.world_size = torch_dist.get_rank(), torch_dist.get_world_size()
    if args.world_size != args.tensor_model_parallel_size:
        sys.exit(f"the job has {args.world_size} processes but tensor_model_parallel_size is "
                 f"{args.tensor_model_parallel_size}: launch one process per tensor-parallel rank")
    parallel_state.initialize_model_parallel(tensor_model_parallel_size=args.tensor_model_parallel_size)
    if backend == "nccl":
        args.device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", "0")))
        torch.cuda.set_device(args.device)
    else:
        args.device = torch.device("cpu")


def finalize() -> None:
    """Barrier, groups torn down, then ``os._exit(0)``: torch 2.13's gloo sometimes aborts in
    static destructors after a clean run, and the job would be reported failed."""
    if torch_dist.is_initialized():
        torch_dist.barrier()
        parallel_state.destroy_model_parallel()
        torch_dist.destroy_process_group()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)
