"""Checkpoint caches: the shared hub mirror and the node-local copies that ranks read from.

The mirror uses the Hugging Face cache layout (`models--<org>--<name>/{refs,snapshots}`).
Reading 8 ranks' worth of weights from the shared file system at job start was slow on the
cluster, so each node keeps a copy of the repository on local scratch and fills it from the
mirror the first time the model is requested on that node.
"""
from __future__ import annotations

import os
import re
import shutil
import uuid
from pathlib import Path

import torch.distributed as dist

from ftpipe.config import CacheConfig

_COMMIT = re.compile(r"^[0-9a-f]{40}$")


def repo_folder(repo_id: str) -> str:
    """Folder name of a model repository inside a hub cache."""
    return "models--" + repo_id.replace("/", "--")


def has_revision(cache_dir: Path, repo_id: str, revision: str) -> bool:
    """Whether `cache_dir` can serve `revision` (a branch/tag ref or a commit) of `repo_id`."""
    repo = cache_dir / repo_folder(repo_id)
    if _COMMIT.match(revision):
        return (repo / "snapshots" / revision).is_dir()
    ref = repo / "refs" / revision
    return ref.is_file() and (repo / "snapshots" / ref.read_text().strip()).is_dir()


def node_index(rank: int, ranks_per_node: int) -> int:
    """Node a global rank runs on (ranks are packed node by node, as torchrun numbers them)."""
    return rank // ranks_per_node


def _copy_repo(src_cache: Path, dst_cache: Path, repo_id: str) -> None:
    """Copy one repository folder between caches; the rename keeps readers from seeing half a copy."""
    src = src_cache / repo_folder(repo_id)
    dst = dst_cache / repo_folder(repo_id)
    staging = dst_cache / f".staging-{uuid.uuid4().hex}"
    shutil.copytree(src, staging, symlinks=True)
    if dst.exists():
        shutil.rmtree(dst)
    os.replace(staging, dst)


def resolve_cache_dir(cfg: CacheConfig, repo_id: str, revision: str, rank: int) -> Path:
    """Hub cache directory this rank loads `repo_id` from.

    With `node_local` the first rank of each node fills the node's copy from the mirror when
    it cannot serve the requested revision yet; every rank waits for that before reading.
    Collective: every rank of the default process group must call it.
    """
    mirror = Path(cfg.mirror)
    if not cfg.node_local:
        return mirror
    node_dir = Path(cfg.node_root) / f"node{node_index(rank, cfg.ranks_per_node)}"
    if rank % cfg.ranks_per_node == 0 and not has_revision(node_dir, repo_id, revision):
        if not has_revision(mirror, repo_id, revision):
            raise FileNotFoundError(
                f"{repo_id}@{revision} is not in the mirror {mirror}; run scripts/publish_base.py"
            )
        node_dir.mkdir(parents=True, exist_ok=True)
        _copy_repo(mirror, node_dir, repo_id)
    dist.barrier()
    return node_dir
