"""Study probe: each rank's dispatch width and slab count per step, without exchanging anything.

    python -m switchyard.synth --config configs/switch2.toml
    torchrun --standalone --nproc_per_node=2 outputs/probe_widths.py

Builds the shipped model on every rank, routes each step's tokens with switchyard.routing.route
(the pipeline's own router) and rank 0 prints one line per rank and step:
``rank R step S tokens T width W slabs N``. No all-to-all runs, so the probe always finishes.
"""
import math
import os
import sys

sys.path.insert(0, os.getcwd())

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

from switchyard import comm, options, weights  # noqa: E402
from switchyard.corpus import Corpus  # noqa: E402
from switchyard.network import TokenModel  # noqa: E402
from switchyard.routing import route  # noqa: E402

opts = options.load("configs/switch2.toml", sys.argv[1:])
ep = opts["parallel.expert_parallel_size"]
comm.join(ep, opts["moe.num_experts"])
rank, world = dist.get_rank(), dist.get_world_size()
model = TokenModel(opts)
weights.load_initial(model, opts["init.checkpoint"], comm.expert_rank(ep))
corpus = Corpus.read(opts["data.corpus"])
lines = []
with torch.no_grad():
    for step in range(opts["train.steps"]):
        x, _ = corpus.share(step, opts["data.docs_per_step"], rank, world)
        h = torch.tanh(model.embed(x))
        routes = route(model.moe.deepspeed_moe.gate.wg(h.float()), opts["moe.top_k"])
        slabs = math.ceil(routes.width / opts["moe.slab_rows"])
        lines.append((step, rank, f"rank {rank} step {step} tokens {x.shape[0]} width {routes.width} slabs {slabs}"))
gathered = [None] * world
dist.all_gather_object(gathered, lines)  # rank 0 prints every rank's lines, one per line
if rank == 0:
    for _, _, line in sorted(item for part in gathered for item in part):
        print(line, flush=True)
dist.barrier()
dist.destroy_process_group()
os._exit(0)
