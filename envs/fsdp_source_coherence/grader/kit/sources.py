"""The two authentic published revisions of the base checkpoint, and hub-layout caches of them.

Source A is revision v1, source B is v2, regenerated from the seeds the team's publish script
records, by the grader's own code, so nothing a revision holds changes what counts as authentic.
The case's fixtures command (``python /kit/sources.py --out-dir DIR``, run by the host once per
grader version) publishes them for every run phase to fill its scenarios' caches from; the
trusted oracle publishes its own.
"""
from __future__ import annotations

import argparse
import hashlib
import os
import shutil
from pathlib import Path

REPO_ID = "lumen-labs/pythia-14m-base"
ARCH_CONFIG = Path(__file__).resolve().parent / "pythia-14m.json"
SEEDS = {"init": 20240611, "stage2": 20240907}
STAGE2_SCALE = 1e-2
LABELS = {"A": "v1", "B": "v2"}
#: The vocabulary of the shipped checkpoint (``pythia-14m.json``) and of the team's rehearsal build
#: (``publish_base.py --vocab-size 2048``, promised by the workspace README): the published shapes.
SHIPPED_VOCAB, REHEARSAL_VOCAB = 50304, 2048
VOCABS = (SHIPPED_VOCAB, REHEARSAL_VOCAB)


def commit_of(source: str, vocab_size: int = SHIPPED_VOCAB) -> str:
    """The hub commit of a source's published revision (the rehearsal build's commits are its own)."""
    build = "" if vocab_size == SHIPPED_VOCAB else f"/vocab{vocab_size}"
    return hashlib.sha1(f"{REPO_ID}@{LABELS[source]}{build}".encode()).hexdigest()


def published_dir(published: Path, vocab_size: int) -> Path:
    """Where :func:`publish_all` put the build of ``vocab_size``."""
    return published / f"vocab{vocab_size}"


def publish_all(dst: Path) -> Path:
    """Every published build (:data:`VOCABS`), each as ``published_dir(dst, vocab)/{A,B}``."""
    for vocab_size in VOCABS:
        publish(published_dir(dst, vocab_size), vocab_size)
    return dst


def publish(dst: Path, vocab_size: int = SHIPPED_VOCAB) -> Path:
    """Build both revisions of one build (single-threaded, so bitwise the same everywhere) as
    ``dst/A``, ``dst/B``."""
    import torch  # noqa: PLC0415 - the kit imports torch only when it publishes
    from transformers import GPTNeoXConfig, GPTNeoXForCausalLM  # noqa: PLC0415

    torch.set_num_threads(1)
    config = GPTNeoXConfig.from_json_file(str(ARCH_CONFIG))
    config.vocab_size = vocab_size
    torch.manual_seed(SEEDS["init"])
    v1, v2 = GPTNeoXForCausalLM(config), GPTNeoXForCausalLM(config)
    v2.load_state_dict(v1.state_dict())
    generator = torch.Generator().manual_seed(SEEDS["stage2"])
    with torch.no_grad():
        for param in v2.parameters():
            param.add_(torch.randn(param.shape, generator=generator) * STAGE2_SCALE)
    v1.save_pretrained(dst / "A")
    v2.save_pretrained(dst / "B")
    return dst


def lay_cache(cache: Path, published: Path, snapshots: tuple[str, ...] | list[str], refs: dict[str, str],
              vocab_size: int = SHIPPED_VOCAB) -> None:
    """A hub cache holding ``snapshots`` of one build (hard links to the files :func:`publish_all`
    wrote under ``published``) and ``refs``."""
    repo, build = cache / ("models--" + REPO_ID.replace("/", "--")), published_dir(published, vocab_size)
    for source in snapshots:
        shutil.copytree(build / source, repo / "snapshots" / commit_of(source, vocab_size), copy_function=os.link)
    (repo / "refs").mkdir(parents=True, exist_ok=True)
    for ref, source in refs.items():
        (repo / "refs" / ref).write_text(commit_of(source, vocab_size))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="Publish both authentic revisions of every build as "
                                     "OUT/published/vocab<N>/{A,B}.")
    parser.add_argument("--out-dir", type=Path, required=True)
    publish_all(parser.parse_args().out_dir / "published")
