"""Pre-build the DeepSpeed ops that runs JIT-compile, so no scenario ever compiles.

Run once by the runtime builder, with the runtime's python and ``TORCH_EXTENSIONS_DIR``
pointing into the runtime directory (read-only afterwards)::

    TORCH_EXTENSIONS_DIR=<runtime>/torch_extensions python deepspeed_ops.py

What needs building (DeepSpeed 0.19.8, torch 2.13, CPU accelerator): every DeepSpeed
engine start creates ``deepspeed.comm.TorchBackend``, which on Linux JIT-compiles the
shared-memory collective op ``deepspeed_shm_comm`` (g++ + ninja, ~50-130 s on 2 cores)
even though training never calls it (only ``inference_all_reduce`` does). There is no
switch to skip it, so it is built here. Nothing else in the cases' training path compiles.

Why the build directory is *sealed*: torch's JIT loader always creates
``<build dir>/lock`` (``os.open(O_CREAT | O_EXCL)``) before checking that the library is
up to date, so a read-only cache fails with ``PermissionError``. A ``lock`` entry that is
a dangling symlink makes that ``os.open`` fail with ``FileExistsError`` instead; torch
then waits for the lock to disappear, which ``os.path.exists`` on a dangling link reports
at once, and imports the prebuilt library without writing anything. The link target is a
name inside the build directory itself, which nobody can create once it is read-only.
Side effect, wanted for an immutable runtime: the library is never rebuilt in place.

Exit status 0 when every needed op is built, sealed and loads in a fresh process without
modifying the cache; 1 otherwise.
"""
from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

# Builder names as deepspeed.comm.torch.build_shm_op asks the accelerator for them.
NEEDED_BUILDERS = ("ShareMemCommBuilder",)
SEAL_TARGET = ".prebuilt-sealed-never-created"

Snapshot = dict[str, tuple[int, int, str]]


def extensions_dir() -> Path:
    """The cache directory torch will use; it must be set explicitly for a runtime build."""
    value = os.environ.get("TORCH_EXTENSIONS_DIR")
    if not value:
        sys.exit("TORCH_EXTENSIONS_DIR is not set: point it into the runtime directory")
    path = Path(value)
    path.mkdir(parents=True, exist_ok=True)
    return path


def build(builder_name: str) -> Path | None:
    """JIT-build one op the way DeepSpeed would at run time.

    Returns its build directory, or None if DeepSpeed would not build it on this host
    (op not offered by the accelerator, or not compatible).
    """
    import deepspeed.ops
    from deepspeed.accelerator import get_accelerator

    builder = get_accelerator().create_op_builder(builder_name)
    if builder is None or not deepspeed.ops.__compatible_ops__.get(builder.NAME, False):
        print(f"{builder_name}: not built on this host by DeepSpeed, nothing to do")
        return None
    module = builder.load(verbose=False)
    build_dir = Path(module.__file__).resolve().parent
    print(f"{builder_name}: built {module.__file__}")
    return build_dir


def seal(build_dir: Path) -> None:
    """Replace any ``lock`` file by the dangling symlink that makes later loads read-only."""
    lock = build_dir / "lock"
    if lock.is_symlink() and os.readlink(lock) == SEAL_TARGET:
        return
    if lock.exists() or lock.is_symlink():
        lock.unlink()
    lock.symlink_to(SEAL_TARGET)


def snapshot(root: Path) -> Snapshot:
    """Size, mtime and link target of every entry under ``root``, to detect writes."""
    out: Snapshot = {}
    for path in sorted(root.rglob("*")):
        st = path.lstat()
        target = os.readlink(path) if path.is_symlink() else ""
        out[str(path.relative_to(root))] = (st.st_size, st.st_mtime_ns, target)
    out["."] = (0, root.stat().st_mtime_ns, "")
    return out


def verify(root: Path, builder_names: tuple[str, ...]) -> bool:
    """Load every op in a fresh interpreter and check the cache was not modified."""
    code = ("from deepspeed.accelerator import get_accelerator as g\n"
            f"for n in {builder_names!r}:\n"
            "    b = g().create_op_builder(n)\n"
            "    print(n, b.load(verbose=False).__file__)\n")
    before = snapshot(root)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=dict(os.environ), timeout=600)
    after = snapshot(root)
    changed = sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))
    print(proc.stdout.strip())
    if proc.returncode != 0:
        print(proc.stderr[-2000:], file=sys.stderr)
    if changed:
        print(f"verification modified the cache: {changed}", file=sys.stderr)
    return proc.returncode == 0 and not changed


def main() -> int:
    """Build, seal and verify every op the cases need."""
    root = extensions_dir()
    if importlib.util.find_spec("deepspeed") is None:
        print("deepspeed is not installed in this runtime: nothing to build")
        return 0
    built = {name: build(name) for name in NEEDED_BUILDERS}
    for build_dir in built.values():
        if build_dir is not None:
            seal(build_dir)
    names = tuple(name for name, d in built.items() if d is not None)
    if names and not verify(root, names):
        return 1
    print(f"deepspeed ops ready in {root}: {list(names) or 'none needed'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
