"""Oracle job (grader.oracle_command): both single-source oracles for one scenario's topology.

    python /grader/oracle_job.py --scenario /io/scenario.json --out-dir /io/oracle

One torchrun of oracle.py in a sandbox whose workspace is empty (no revision code runs): the
records land in OUT/<source>/rank<r>.pt, the launch's log in OUT/oracle.log. The oracle does not
depend on the scenario's caches, only on its devices, backend and `train` param (the training's
length and shape, which a profile scales); the gym still caches it per scenario request and
mounts it read-only at /oracle/<scenario> for every judge. Exit status 0 when every record is
there and loads.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import os
import shutil
import sys
import tempfile
import time
import tomllib
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE / "kit")]

import layout  # noqa: E402
from artifacts import ArtifactError  # noqa: E402
from compare import load_record  # noqa: E402
from sources import SOURCES  # noqa: E402

sys.path.append(os.environ.get("TRAINFAIL_HARNESSLIB", "/harnesslib"))
from warm_launch import launch_cold  # noqa: E402

#: Seconds of the scenario's time kept for checking the records.
MARGIN_S = 20.0


def frozen_timeout(name: str, default: int) -> int:
    """The scenario's timeout_s from scenarios.toml (requests may not carry it)."""
    table = tomllib.loads((HERE / "scenarios.toml").read_text())
    return next((int(s["timeout_s"]) for s in table["scenario"] if s["name"] == name), default)


def oracle_env(backend: str) -> dict[str, str]:
    """The sandbox's environment with the knobs the oracle run reads."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRAINFAIL_PROBE")}
    env.pop("PYTHONPATH", None)
    env.update(OMP_NUM_THREADS=env.get("OMP_NUM_THREADS", "1"), HF_HUB_OFFLINE="1", TRAINFAIL_BACKEND=backend,
               HF_HUB_DISABLE_PROGRESS_BARS="1", TQDM_DISABLE="1")
    return env


def complete(out_dir: Path, devices: int) -> str | None:
    """None when both sources' records load as oracle records, else what is wrong."""
    for source in SOURCES:
        try:
            load_record(out_dir / source, devices, layout.ORACLE_RECORD_LIMIT_BYTES, tensors=True)
        except ArtifactError as exc:
            return f"oracle {source}: {exc}"
    return None


def make_oracle(request: layout.Request, out_dir: Path) -> str | None:
    """Run oracle.py into `out_dir`; None when complete, else why not."""
    started = time.time()
    timeout = frozen_timeout(request.name, request.timeout_s) - MARGIN_S
    scratch = Path(tempfile.mkdtemp(prefix="fsdp-source-oracle-"))
    try:
        argv = [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={request.devices}",
                str(HERE / "oracle.py"), "--published", str(scratch / "published"), "--out", str(out_dir),
                "--steps", str(request.train.steps), "--micro-batch-size", str(request.train.micro_batch_size),
                "--seq-len", str(request.train.seq_len)]
        ended = launch_cold(argv, scratch, oracle_env(request.backend), out_dir / "oracle.log", timeout)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    problem = complete(out_dir, request.devices)
    meta = {"scenario": request.name, "devices": request.devices, "backend": request.backend,
            "train": dataclasses.asdict(request.train),
            "returncode": ended.returncode, "oracle_s": round(time.time() - started, 3), "problem": problem}
    (out_dir / "oracle.json").write_text(json.dumps(meta, indent=2) + "\n")
    return problem


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scenario", type=Path, required=True, help="one scenario request (JSON)")
    parser.add_argument("--out-dir", type=Path, required=True)
    args = parser.parse_args()
    request = layout.parse_request(json.loads(args.scenario.read_text()))
    out_dir = args.out_dir.resolve()  # the launch runs in a scratch folder
    out_dir.mkdir(parents=True, exist_ok=True)
    problem = make_oracle(request, out_dir)
    print(f"{request.name}: oracle {'ready' if problem is None else problem}")
    sys.exit(0 if problem is None else 1)


if __name__ == "__main__":
    main()
