"""The two authentic published revisions of the base checkpoint, and hub-layout caches.

Source A is revision v1, source B is revision v2. They are regenerated from the same recorded
seeds as the team's publish script, by the grader's own code, so nothing the workspace holds
can change what counts as authentic. The run kit publishes them to fill the scenario's caches;
what the judge counts as authentic is the trusted oracle job's own copy (from /grader/kit).
"""
from __future__ import annotations

import hashlib
import shutil
import sys
from pathlib import Path

from recipe import REPO_ID

ARCH_CONFIG = Path(__file__).resolve().parent / "pythia-14m.json"
INIT_SEED = 20240611
STAGE2_SEED = 20240907
STAGE2_SCALE = 1e-2
LABELS = {"A": "v1", "B": "v2"}
SOURCES = tuple(LABELS)


def commit_of(source: str) -> str:
    """Hub commit hash of a source's published revision."""
    return hashlib.sha1(f"{REPO_ID}@{LABELS[source]}".encode()).hexdigest()


def repo_dir(cache: Path) -> Path:
    """The repository folder inside a hub cache."""
    return cache / ("models--" + REPO_ID.replace("/", "--"))


def publish(dst: Path) -> dict[str, Path]:
    """Build both revisions and save each as a checkpoint folder `<dst>/<source>`."""
    import torch
    from transformers import GPTNeoXConfig, GPTNeoXForCausalLM

    config = GPTNeoXConfig.from_json_file(str(ARCH_CONFIG))
    torch.manual_seed(INIT_SEED)
    v1 = GPTNeoXForCausalLM(config)
    v2 = GPTNeoXForCausalLM(config)
    v2.load_state_dict(v1.state_dict())
    generator = torch.Generator().manual_seed(STAGE2_SEED)
    with torch.no_grad():
        for param in v2.parameters():
            param.add_(torch.randn(param.shape, generator=generator) * STAGE2_SCALE)
    out = {"A": dst / "A", "B": dst / "B"}
    v1.save_pretrained(out["A"])
    v2.save_pretrained(out["B"])
    return out


def lay_cache(cache: Path, published: Path, sources: tuple[str, ...] | list[str], main: str) -> None:
    """Write a hub cache holding `sources` (copies of the published folders), refs/main -> `main`."""
    repo = repo_dir(cache)
    for source in sources:
        shutil.copytree(published / source, repo / "snapshots" / commit_of(source))
    (repo / "refs").mkdir(parents=True, exist_ok=True)
    (repo / "refs" / "main").write_text(commit_of(main))


def main() -> None:
    """`python -m sources DIR`: publish both revisions into DIR (the run kit's first launch)."""
    publish(Path(sys.argv[1]))


if __name__ == "__main__":
    main()
