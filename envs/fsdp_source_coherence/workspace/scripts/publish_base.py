"""Publish the base checkpoint's revisions into the team hub mirror (Hugging Face cache layout).

There is no network here, so the two published revisions of lumen-labs/pythia-14m-base are
regenerated deterministically from their recorded seeds instead of being downloaded:

  v1  the first export of the base model
  v2  the re-export after the second pretraining stage (v1 plus that stage's update)

Both land in `<mirror>/models--lumen-labs--pythia-14m-base/snapshots/<commit>/` and
`refs/main` points at `--main` (v2, the latest, by default). Re-running rewrites the mirror.
`--vocab-size N` publishes the narrow-vocabulary rehearsal build of the same revisions (CI's:
2048), the architecture of configs/pythia-14m.json with the embedding and output head cut to N
rows, under its own commits.

    python scripts/publish_base.py [--mirror .cache/hub-mirror] [--main v2] [--vocab-size N] [--if-missing]
"""
from __future__ import annotations

import argparse
import hashlib
import shutil
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from transformers import GPTNeoXForCausalLM

REPO_ID = "lumen-labs/pythia-14m-base"
ARCH_CONFIG = Path(__file__).resolve().parent.parent / "configs" / "pythia-14m.json"
INIT_SEED = 20240611  # seed of the v1 export
STAGE2_SEED = 20240907  # seed of the second-stage update that produced v2
STAGE2_SCALE = 1e-2


def commit_of(label: str, vocab_size: int | None = None) -> str:
    """Commit hash the hub gave a published revision (stable, derived from the label; a
    rehearsal build's from its vocabulary size too)."""
    build = "" if vocab_size is None else f"/vocab{vocab_size}"
    return hashlib.sha1(f"{REPO_ID}@{label}{build}".encode()).hexdigest()


def build_revisions(vocab_size: int | None = None) -> dict[str, GPTNeoXForCausalLM]:
    """Both published revisions, built in order from their seeds."""
    # Imported here so that `--if-missing` on an existing mirror returns at once.
    import torch
    from transformers import GPTNeoXConfig, GPTNeoXForCausalLM

    config = GPTNeoXConfig.from_json_file(str(ARCH_CONFIG))
    if vocab_size is not None:
        config.vocab_size = vocab_size
    torch.manual_seed(INIT_SEED)
    v1 = GPTNeoXForCausalLM(config)
    v2 = GPTNeoXForCausalLM(config)
    v2.load_state_dict(v1.state_dict())
    generator = torch.Generator().manual_seed(STAGE2_SEED)
    with torch.no_grad():
        for param in v2.parameters():
            param.add_(torch.randn(param.shape, generator=generator) * STAGE2_SCALE)
    return {"v1": v1, "v2": v2}


def publish(mirror: Path, main: str, vocab_size: int | None = None) -> None:
    """Write every revision's snapshot and point refs/main at `main`."""
    repo = mirror / ("models--" + REPO_ID.replace("/", "--"))
    if repo.exists():
        shutil.rmtree(repo)
    for label, model in build_revisions(vocab_size).items():
        model.save_pretrained(repo / "snapshots" / commit_of(label, vocab_size))
        print(f"published {REPO_ID}@{label} -> {commit_of(label, vocab_size)}")
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text(commit_of(main, vocab_size))
    print(f"refs/main -> {main} ({commit_of(main, vocab_size)})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mirror", type=Path, default=Path(".cache/hub-mirror"))
    parser.add_argument("--main", choices=["v1", "v2"], default="v2", help="revision refs/main points at")
    parser.add_argument("--vocab-size", type=int, default=None, help="the rehearsal build's vocabulary")
    parser.add_argument("--if-missing", action="store_true", help="do nothing if the mirror has refs/main")
    args = parser.parse_args()
    ref = args.mirror / ("models--" + REPO_ID.replace("/", "--")) / "refs" / "main"
    if args.if_missing and ref.is_file():
        return
    publish(args.mirror, args.main, args.vocab_size)


if __name__ == "__main__":
    main()
