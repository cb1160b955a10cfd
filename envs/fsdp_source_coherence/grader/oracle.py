"""Trusted same-topology oracle of TrainFail/FSDPSourceCoherence-v2 (``grader.oracle_command``).

    python /grader/oracle.py --scenario /io/scenario.json --out-dir /io/oracle

One cold torchrun of this file (``--worker``) on the scenario's devices, in a sandbox whose
workspace is empty (no revision code): rank 0 publishes both authentic sources, then for each
source every rank loads it with the plain Hugging Face loader, shards it as the README says,
trains the scenario's recipe and records the state with the run's own probe (final parameters
kept): ``OUT/<source>/rank<r>.pt``. The oracle does not read the scenario's caches, only its
devices and training options. Exit status 0 when every record loads.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
HARNESSLIB = Path(os.environ.get("TRAINFAIL_HARNESSLIB", "/harnesslib"))
sys.path[:0] = [str(HERE / "kit"), str(HARNESSLIB), str(HARNESSLIB / "observers")]

import sources  # noqa: E402
from scenario import Scenario  # noqa: E402

RECORD_LIMIT = 256 << 20  # rank 0 keeps the final parameters (at most about 56 MB)


def worker(sc: Scenario, published: Path, out: Path) -> None:
    """One rank of the oracle job: every source in turn, recorded like the run under test."""
    import torch  # noqa: PLC0415 - only the ranks import torch
    import torch.distributed as dist  # noqa: PLC0415
    from source_probe import SourceProbe  # noqa: PLC0415
    from torch.distributed.device_mesh import init_device_mesh  # noqa: PLC0415
    from torch.distributed.fsdp import fully_shard  # noqa: PLC0415
    from transformers import AutoModelForCausalLM  # noqa: PLC0415

    backend = os.environ.get("TRAINFAIL_BACKEND", "gloo")
    dist.init_process_group(backend)
    rank, world = dist.get_rank(), dist.get_world_size()
    device = torch.device("cuda", int(os.environ["LOCAL_RANK"])) if backend == "nccl" else torch.device("cpu")
    if backend == "nccl":
        torch.cuda.set_device(device)
    if rank == 0:
        sources.publish(published, sc.vocab_size)
    dist.barrier()
    mesh = init_device_mesh(device.type, (world,))
    for source in ("A", "B"):
        model = AutoModelForCausalLM.from_pretrained(published / source, hidden_dropout=sc.hidden_dropout,
                                                     attention_dropout=sc.attention_dropout).train().to(device)
        for block in model.gpt_neox.layers:
            fully_shard(block, mesh=mesh)
        fully_shard(model, mesh=mesh)
        probe = SourceProbe(out / source, sc.steps, rank, world, keep_params=True)
        probe.capture_initial(model)
        optimizer = torch.optim.AdamW(model.parameters(), lr=sc.lr, betas=tuple(sc.betas), eps=sc.eps,
                                      weight_decay=sc.weight_decay)  # fmt: skip
        data = torch.Generator().manual_seed(sc.seed + rank)
        torch.manual_seed(sc.seed + 1000 * (rank + 1))
        for _ in range(sc.steps):
            ids = torch.randint(0, model.config.vocab_size, (sc.micro_batch_size, sc.seq_len), generator=data)
            optimizer.zero_grad(set_to_none=True)
            model(input_ids=ids.to(device), labels=ids.to(device)).loss.backward()
            optimizer.step()
        probe.capture_final(model, optimizer)
    dist.barrier()
    dist.destroy_process_group()
    sys.stdout.flush()
    os._exit(0)  # records are on disk; gloo in torch 2.13 can abort in interpreter teardown


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scenario", type=Path, required=True, help="one scenario request (JSON)")
    parser.add_argument("--out-dir", type=Path, required=True)
    parser.add_argument("--worker", type=Path, help="(ranks) the folder the sources are published into")
    args = parser.parse_args()
    sc = Scenario.from_json(args.scenario)
    out = args.out_dir.resolve()
    if args.worker is not None:
        return worker(sc, args.worker, out)
    from readers import ArtifactError, read_rank_records  # noqa: PLC0415 - the harness library
    from warm_launch import launch_cold  # noqa: PLC0415

    out.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1", "TQDM_DISABLE": "1",
           "TRAINFAIL_BACKEND": sc.backend, "PYTHONPATH": os.pathsep.join(sys.path[:3])}  # fmt: skip
    with tempfile.TemporaryDirectory(prefix="fsdp-oracle-") as scratch:
        argv = [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={sc.devices}",
                str(Path(__file__).resolve()), "--scenario", str(args.scenario.resolve()), "--out-dir", str(out),
                "--worker", str(Path(scratch) / "published")]  # fmt: skip
        ended = launch_cold(argv, Path(scratch), env, out / "oracle.log", sc.run_timeout_s)
    problem = None
    for source in ("A", "B"):
        try:
            read_rank_records(out / source, sc.devices, RECORD_LIMIT)
        except ArtifactError as err:
            problem = f"oracle {source}: {err}"
    (out / "oracle.json").write_text(json.dumps({"returncode": ended.returncode, "problem": problem}) + "\n")
    print(f"{sc.name}: oracle {problem or 'ready'}")
    sys.exit(0 if problem is None else 1)


if __name__ == "__main__":
    main()
