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


def commit_of(source: str) -> str:
    """The hub commit of a source's published revision."""
    return hashlib.sha1(f"{REPO_ID}@{LABELS[source]}".encode()).hexdigest()


def publish(dst: Path) -> Path:
    """Build both revisions (single-threaded, so bitwise the same everywhere) as ``dst/A``, ``dst/B``."""
    import torch  # noqa: PLC0415 - the kit imports torch only when it publishes
    from transformers import GPTNeoXConfig, GPTNeoXForCausalLM  # noqa: PLC0415

    torch.set_num_threads(1)
    config = GPTNeoXConfig.from_json_file(str(ARCH_CONFIG))
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


def lay_cache(cache: Path, published: Path, snapshots: tuple[str, ...] | list[str], refs: dict[str, str]) -> None:
    """A hub cache holding ``snapshots`` (hard links to the published files) and ``refs``."""
    repo = cache / ("models--" + REPO_ID.replace("/", "--"))
    for source in snapshots:
        shutil.copytree(published / source, repo / "snapshots" / commit_of(source), copy_function=os.link)
    (repo / "refs").mkdir(parents=True, exist_ok=True)
    for ref, source in refs.items():
        (repo / "refs" / ref).write_text(commit_of(source))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="Publish both authentic revisions as OUT/published/{A,B}.")
    parser.add_argument("--out-dir", type=Path, required=True)
    publish(parser.parse_args().out_dir / "published")
