"""Probe: with one node's cache stale, which snapshot does each rank load, and what does FSDP shard?

Reproduces the cluster state the README warns about in a scratch node root
(outputs/probe-nodes): node1's copy was taken while the mirror's refs/main still pointed at v1
(it holds both snapshots, refs/main -> v1); node0 starts empty and is filled from the mirror by
the pipeline's own first-use copy. Then it runs the pipeline's own entry point
(ftpipe.train.main, one update) on 2 ranks with two read-only hooks:

  * after every from_pretrained() call: the snapshot commit the rank's cache resolved;
  * right before shard_model(): a sha256 of the full state dict the rank hands to FSDP.

    python outputs/probe_sources.py          # sets up, then re-launches itself under torchrun
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

REPO_ID = "lumen-labs/pythia-14m-base"
REPO_DIR = "models--" + REPO_ID.replace("/", "--")
MIRROR = Path(".cache/hub-mirror")
NODE_ROOT = Path("outputs/probe-nodes")
OVERRIDES = [
    f"cache.node_root={NODE_ROOT}",
    "cache.node_local=true",
    "cache.ranks_per_node=1",
    "train.steps=1",
    "output.dir=outputs/probe-run",
    "output.save_final=false",
]
QUIET = {
    "PYTHONWARNINGS": "ignore",
    "TRANSFORMERS_VERBOSITY": "error",
    "HF_HUB_DISABLE_PROGRESS_BARS": "1",
    "TQDM_DISABLE": "1",
    "OMP_NUM_THREADS": "1",
}


def commit_of(label: str) -> str:
    """The commit publish_base.py gives a published revision."""
    return hashlib.sha1(f"{REPO_ID}@{label}".encode()).hexdigest()


def setup() -> None:
    """Mirror (if missing) plus a stale node1 copy; node0 empty."""
    env = {**os.environ, **QUIET}
    subprocess.run([sys.executable, "scripts/publish_base.py", "--if-missing"], check=True, env=env,
                   stdout=subprocess.DEVNULL)
    shutil.rmtree(NODE_ROOT, ignore_errors=True)
    stale = NODE_ROOT / "node1" / REPO_DIR
    shutil.copytree(MIRROR / REPO_DIR, stale, symlinks=True)
    (stale / "refs" / "main").write_text(commit_of("v1"))
    print("setup: node1 holds a stale copy (both snapshots, refs/main -> v1); node0 starts empty, "
          "filled from the mirror (refs/main -> v2)", flush=True)


def launch() -> None:
    setup()
    command = ["torchrun", "--standalone", "--nproc_per_node", os.environ.get("TRAINFAIL_DEVICES", "2"),
               __file__, *OVERRIDES]
    done = subprocess.run(command, env={**os.environ, **QUIET})
    shutil.rmtree(NODE_ROOT, ignore_errors=True)  # two ~110 MB node copies
    sys.exit(done.returncode)


def probe() -> None:
    sys.path.insert(0, os.getcwd())
    import logging
    import warnings

    warnings.filterwarnings("ignore")
    import torch
    from transformers import AutoModelForCausalLM

    import ftpipe.train as train

    rank = int(os.environ["RANK"])
    original = AutoModelForCausalLM.from_pretrained

    def from_pretrained(*args, **kwargs):  # type: ignore[no-untyped-def]
        model = original(*args, **kwargs)
        revision = kwargs.get("revision") or "main"
        repo = Path(kwargs["cache_dir"]) / REPO_DIR
        ref = repo / "refs" / revision
        commit = ref.read_text().strip() if ref.is_file() else revision
        print(f"[rank{rank}] loaded {REPO_ID}@{revision} from snapshot {commit} ({kwargs['cache_dir']})",
              flush=True)
        return model

    AutoModelForCausalLM.from_pretrained = from_pretrained
    shard_model = train.shard_model

    def digest_then_shard(model, mesh):  # type: ignore[no-untyped-def]
        h = hashlib.sha256()
        state = model.state_dict()
        with torch.no_grad():
            for name in sorted(state):
                h.update(name.encode())
                h.update(state[name].detach().cpu().contiguous().reshape(-1).view(torch.uint8).numpy().tobytes())
        print(f"[rank{rank}] pre-FSDP state_dict sha256={h.hexdigest()} ({len(state)} tensors)", flush=True)
        return shard_model(model, mesh)

    train.shard_model = digest_then_shard
    logging.getLogger("transformers").setLevel(logging.ERROR)
    train.main(["--config", "configs/finetune.yaml", *sys.argv[1:]])


if __name__ == "__main__":
    if "RANK" in os.environ:
        probe()
    else:
        launch()
