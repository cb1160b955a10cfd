"""uv vs. pip building the same case runtime from the same lock: time, identity and content.

    .venv/bin/python benchmarks/bench_install.py [--arm control] [--scratch /tmp/bench-install]

Builds the arm's runtime twice with empty caches, once with ``TRAINFAIL_INSTALLER=pip`` and once
with uv (``$TRAINFAIL_INSTALLER`` or the uv the installer finds), each in a fresh state directory
at the **same path** (a runtime's venv holds its path), moving the first aside before the second.
Reports each build's time and install time, the load average before and after, and compares the
two: the runtime digest (folder name), ``pip freeze --all``, and every file (bytecode by name
only: it embeds the source's mtime). Writes benchmarks/results/install.json. Figures, not
assertions: minutes of CPU on 2 cores, so it is not part of the test suite.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import time
from collections import Counter
from pathlib import Path

RESULTS = Path(__file__).parent / "results"
REPO = Path(__file__).resolve().parent.parent
#: What only one installer writes into a distribution's metadata (provenance, not code).
PROVENANCE = {"INSTALLER", "RECORD", "REQUESTED", "uv_cache.json", "uv_build.json", "direct_url.json"}


def loadavg() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def build(arm: str, home: Path, installer: str, scratch: Path) -> dict[str, object]:
    """One cold build: fresh state directory and caches, the given installer."""
    for path in (home, scratch / "pip-cache", scratch / "uv-cache"):
        shutil.rmtree(path, ignore_errors=True)
    env = {
        **os.environ,
        "TRAINFAIL_HOME": str(home),
        "TRAINFAIL_INSTALLER": installer,
        "PIP_CACHE_DIR": str(scratch / "pip-cache"),
        "UV_CACHE_DIR": str(scratch / "uv-cache"),
    }
    before, started = loadavg(), time.monotonic()
    subprocess.run([str(REPO / ".venv" / "bin" / "trainfail"), "runtimes", "build", "--arm", arm], env=env, check=True)
    seconds, after = time.monotonic() - started, loadavg()
    (root,) = [p for p in (home / "runtimes").glob(f"{arm}-*") if p.is_dir()]  # not its .lock file
    meta = json.loads((root / "runtime.json").read_text())
    freeze = subprocess.run(
        [str(root / "venv" / "bin" / "python"), "-m", "pip", "freeze", "--all"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    return {
        "installer": meta.get("installer", "pip"),
        "root": root.name,
        "digest": meta["digest"],
        "seconds": round(seconds, 1),
        "install_seconds": meta.get("install_seconds"),
        "load_before": before,
        "load_after": after,
        "freeze": freeze,
    }


def tree(root: Path) -> dict[str, str]:
    """relative path → sha256 (``pyc``/``link`` for bytecode and symlinks)."""
    out = {}
    for path in sorted(root.rglob("*")):
        rel = str(path.relative_to(root))
        if path.is_symlink():
            out[rel] = "link:" + os.readlink(path)
        elif path.is_file():
            out[rel] = "pyc" if path.suffix == ".pyc" else hashlib.sha256(path.read_bytes()).hexdigest()
    return out


def kind(rel: str) -> str:
    name = Path(rel).name
    if name in PROVENANCE:
        return f"dist-info/{name}"
    if rel.startswith("venv/bin/"):
        return "console script"
    if rel.startswith("torch_extensions/"):
        return "compiled DeepSpeed op"
    return rel


def compare(first: Path, second: Path) -> dict[str, object]:
    a, b = tree(first), tree(second)
    differ = [k for k in a.keys() & b.keys() if a[k] != b[k]]
    return {
        "files": [len(a), len(b)],
        "only_pip": dict(Counter(kind(k) for k in a.keys() - b.keys())),
        "only_uv": dict(Counter(kind(k) for k in b.keys() - a.keys())),
        "differ": dict(Counter(kind(k) for k in differ)),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--arm", default="control")
    parser.add_argument("--scratch", type=Path, default=Path("/tmp/bench-install"))
    args = parser.parse_args()
    scratch: Path = args.scratch
    home = scratch / "home"
    uv = os.environ.get("TRAINFAIL_INSTALLER", "auto")
    pip_run = build(args.arm, home, "pip", scratch)
    kept = scratch / "pip-home"
    shutil.rmtree(kept, ignore_errors=True)
    home.rename(kept)  # the uv build goes to the same path; compare against the moved copy
    uv_run = build(args.arm, home, uv, scratch)
    result = {
        "arm": args.arm,
        "pip": {k: v for k, v in pip_run.items() if k != "freeze"},
        "uv": {k: v for k, v in uv_run.items() if k != "freeze"},
        "same_digest": pip_run["digest"] == uv_run["digest"],
        "same_freeze": pip_run["freeze"] == uv_run["freeze"],
        "packages": len(pip_run["freeze"]),  # type: ignore[arg-type]
        "tree": compare(kept / "runtimes" / str(pip_run["root"]), home / "runtimes" / str(uv_run["root"])),
    }
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "install.json").write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
