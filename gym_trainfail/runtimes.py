"""Case runtimes: the Python environment a case runs in, one per arm, built once.

A runtime is a virtual environment built from the arm's requirement set in ``containers/``.
Its folder name carries a content hash of its inputs (interpreter version, requirement files,
build hooks, blocker), so a changed input builds a new runtime and an unchanged one is reused.
Sandboxes mount it read-only at the same path (console-script shebangs hold that path).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from gym_trainfail.arms import Arm, get_arm
from gym_trainfail.errors import RuntimeMissingError, TrainFailError
from gym_trainfail.hashing import bytes_digest
from gym_trainfail.paths import containers_dir, runtimes_dir

#: Bump when the build procedure changes in a way the inputs do not show.
BUILD_SCHEMA = "4"
COMPLETE_MARKER = ".complete"
BLOCKER_MODULE = "_trainfail_blocker.py"
BLOCKER_PTH = "_trainfail_blocker.pth"
TRACKER_MODULE = "_trainfail_usage.py"
TRACKER_PTH = "_trainfail_usage.pth"
DECOY_MODULE = "_trainfail_decoy.py"
#: In a blocking arm's runtime (relative to its root): a folder holding only the decoy
#: ``traincheck`` package, put on the episode sandbox's ``PYTHONPATH`` so that ``python -S``
#: (which skips the blocker) still reaches something the host watches.
DECOY_DIR = "blocked"
DECOY_PACKAGE = f"{DECOY_DIR}/traincheck"
#: Empty files the blocker opens when it refuses something (one per kind of refusal): the host
#: watches them, so a refusal is seen even when the audit channel is not.
REFUSALS_DIR = "refusals"
REFUSAL_KINDS = ("import", "open", "command")


@dataclass(frozen=True)
class Runtime:
    """A built runtime on the host."""

    arm: str
    root: Path
    digest: str
    base_prefix: Path
    python_version: str

    @property
    def venv(self) -> Path:
        return self.root / "venv"

    @property
    def bin_dir(self) -> Path:
        return self.venv / "bin"

    @property
    def python(self) -> Path:
        return self.bin_dir / "python"

    @property
    def extensions_dir(self) -> Path:
        """Prebuilt torch C++ extensions (DeepSpeed ops), reused read-only at run time."""
        return self.root / "torch_extensions"

    @property
    def site_packages(self) -> Path:
        return self.venv / "lib" / f"python{self.python_version}" / "site-packages"

    def env(self) -> dict[str, str]:
        """Environment entries a command needs to use this runtime."""
        return {
            "PATH": f"{self.bin_dir}:/usr/local/bin:/usr/bin:/bin",
            "VIRTUAL_ENV": str(self.venv),
            "TORCH_EXTENSIONS_DIR": str(self.extensions_dir),
        }

    def readonly_paths(self) -> list[Path]:
        """Host paths a sandbox must mount read-only, at the same path, to run this runtime."""
        paths = [self.root]
        if not _under(self.base_prefix, Path("/usr")):
            paths.insert(0, self.base_prefix)
        return paths

    def hidden_paths(self) -> list[Path]:
        """Host paths inside the mounts that must look empty (the base interpreter's packages)."""
        if _under(self.base_prefix, Path("/usr")):
            return []
        return [self.base_prefix / "lib" / f"python{self.python_version}" / "site-packages"]


def _under(path: Path, parent: Path) -> bool:
    return path == parent or parent in path.parents


def base_interpreter() -> Path:
    """The interpreter runtimes are built from: ``$TRAINFAIL_PYTHON`` or this Python's base."""
    override = os.environ.get("TRAINFAIL_PYTHON")
    if override:
        return Path(override)
    version = f"{sys.version_info.major}.{sys.version_info.minor}"
    candidate = Path(sys.base_prefix) / "bin" / f"python{version}"
    return candidate if candidate.exists() else Path(sys.executable)


def _interpreter_facts(python: Path) -> tuple[str, Path]:
    out = subprocess.run(
        [
            str(python),
            "-c",
            "import sys; print(f'{sys.version_info[0]}.{sys.version_info[1]}'); print(sys.base_prefix)",
        ],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.split("\n")
    return out[0].strip(), Path(out[1].strip()).resolve()


def resolve_requirements(path: Path, seen: frozenset[Path] = frozenset()) -> list[str]:
    """The requirement lines of ``path`` with ``-r`` includes expanded and comments dropped."""
    if path in seen:
        raise TrainFailError(f"{path}: requirement files include each other")
    lines: list[str] = []
    for raw in path.read_text().splitlines():
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        include = re.match(r"^(-r|--requirement)\s+(\S+)$", line)
        if include:
            lines.extend(resolve_requirements(path.parent / include.group(2), seen | {path}))
        else:
            lines.append(line)
    return lines


def postbuild_scripts() -> list[Path]:
    """Build hooks run once with the new runtime (e.g. ahead-of-time DeepSpeed op builds)."""
    folder = containers_dir() / "runtime" / "postbuild"
    return sorted(folder.glob("*.py")) if folder.is_dir() else []


def blocker_sources() -> dict[str, str]:
    """The control arm's import blocker, installed into site-packages."""
    folder = containers_dir() / "runtime" / "blocker"
    return {name: (folder / name).read_text() for name in (BLOCKER_MODULE, BLOCKER_PTH)}


def tracker_sources() -> dict[str, str]:
    """The treatment arm's usage tracker, installed into site-packages."""
    folder = containers_dir() / "runtime" / "tracker"
    return {name: (folder / name).read_text() for name in (TRACKER_MODULE, TRACKER_PTH)}


def arm_hooks(arm: Arm) -> dict[str, str]:
    """The start-up hooks an arm's runtime gets: the blocker, or the usage tracker."""
    return blocker_sources() if arm.blocks_traincheck else tracker_sources()


def decoy_source() -> str:
    """The control arm's stand-in ``traincheck/__init__.py`` (see :data:`DECOY_DIR`)."""
    return (containers_dir() / "runtime" / "blocker" / DECOY_MODULE).read_text()


def runtime_digest(arm: Arm, python_version: str) -> str:
    """Content hash of everything a runtime is built from."""
    parts = [
        f"schema={BUILD_SCHEMA}",
        f"python={python_version}",
        f"arm={arm.name}",
        *resolve_requirements(arm.requirements_file),
        *(f"{p.name}:{bytes_digest(p.read_bytes())}" for p in postbuild_scripts()),
    ]
    parts.extend(f"{k}:{bytes_digest(v.encode())}" for k, v in sorted(arm_hooks(arm).items()))
    if arm.blocks_traincheck:
        parts.append(f"{DECOY_MODULE}:{bytes_digest(decoy_source().encode())}")
    return bytes_digest("\n".join(parts).encode())


def runtime_root(arm: Arm, python: Path | None = None) -> tuple[Path, str, str, Path]:
    """Where the runtime for ``arm`` lives, with its digest, Python version and base prefix."""
    version, base_prefix = _interpreter_facts(python or base_interpreter())
    digest = runtime_digest(arm, version)
    return runtimes_dir() / f"{arm.name}-{digest[:16]}", digest, version, base_prefix


def find_runtime(arm_name: str) -> Runtime:
    """The built runtime of an arm, or :class:`RuntimeMissingError` saying how to build it."""
    arm = get_arm(arm_name)
    root, digest, version, base_prefix = runtime_root(arm)
    if not (root / COMPLETE_MARKER).exists():
        raise RuntimeMissingError(
            f"the {arm.name!r} runtime is not built (expected {root}); run "
            f"`trainfail runtimes build --arm {arm.name}` (a few minutes, once)"
        )
    base_prefix = Path(json.loads((root / "runtime.json").read_text())["base_prefix"])
    return Runtime(arm=arm.name, root=root, digest=digest, base_prefix=base_prefix, python_version=version)


Progress = Callable[[str], None]


def build_runtime(arm_name: str, *, progress: Progress = lambda _: None, force: bool = False) -> Runtime:
    """Build (or reuse) the runtime of an arm. Safe against concurrent builders."""
    arm = get_arm(arm_name)
    python = base_interpreter()
    root, digest, version, base_prefix = runtime_root(arm, python)
    root.parent.mkdir(parents=True, exist_ok=True)
    with _locked(root.with_name(root.name + ".lock")):
        if (root / COMPLETE_MARKER).exists() and not force:
            progress(f"runtime {root.name} is up to date")
            return find_runtime(arm.name)
        if root.exists():
            shutil.rmtree(root)
        root.mkdir()
        runtime = Runtime(arm=arm.name, root=root, digest=digest, base_prefix=base_prefix, python_version=version)
        log = root / "build.log"
        started = time.monotonic()
        progress(f"creating virtual environment with {python}")
        _run([str(python), "-m", "venv", str(runtime.venv)], log)
        progress(f"installing {arm.requirements_file.name} (pip; torch is the CPU build)")
        _run(
            [
                str(runtime.python),
                "-m",
                "pip",
                "install",
                "--no-input",
                "-r",
                str(arm.requirements_file),
            ],
            log,
            extra_env={"DS_BUILD_OPS": "0", "PIP_DISABLE_PIP_VERSION_CHECK": "1"},
        )
        _run([str(runtime.python), "-m", "pip", "check"], log)
        progress("installing the arm's start-up hooks (TrainCheck blocker or usage tracker)")
        for name, source in arm_hooks(arm).items():
            (runtime.site_packages / name).write_text(source)
        if arm.blocks_traincheck:
            _write_command_shims(runtime)
            _write_decoy(runtime)
        runtime.extensions_dir.mkdir()
        for script in postbuild_scripts():
            progress(f"running build hook {script.name}")
            _run([str(runtime.python), str(script)], log, extra_env=runtime.env())
        freeze = subprocess.run(
            [str(runtime.python), "-m", "pip", "freeze"], check=True, capture_output=True, text=True
        ).stdout.split()
        meta = {
            "arm": arm.name,
            "digest": digest,
            "python": version,
            "base_prefix": str(base_prefix),
            "packages": freeze,
            "build_seconds": round(time.monotonic() - started, 1),
        }
        (root / "runtime.json").write_text(json.dumps(meta, indent=2))
        _make_readonly(root)
        (root / COMPLETE_MARKER).write_text(digest)
        progress(f"runtime {root.name} built in {meta['build_seconds']} s")
        return runtime


#: TrainCheck's console scripts; in a blocking arm each answers with the blocker's message.
TRAINCHECK_COMMANDS = (
    "traincheck-collect",
    "traincheck-infer",
    "traincheck-check",
    "traincheck-onlinecheck",
)


def _write_command_shims(runtime: Runtime) -> None:
    # A shell script, not a Python one: the blocker's audit hook refuses to open Python files
    # whose path names TrainCheck, which would hide the message behind an OSError. It finds its
    # interpreter beside itself: a Docker image (and the host's watch copy) holds the runtime
    # at another path than the one it was built at.
    for command in TRAINCHECK_COMMANDS:
        shim = runtime.bin_dir / command
        shim.write_text(
            "#!/bin/sh\n"
            'exec "$(dirname "$0")/python" -c "import sys, _trainfail_blocker as b; '
            f"b._report('command', {command!r}); sys.exit(b.MESSAGE)\"\n"
        )
        shim.chmod(0o755)


def _write_decoy(runtime: Runtime) -> None:
    # The decoy package and the refusal markers are where the host's watch looks (gym_trainfail.
    # sandbox.watch): each sandbox shows a private copy over them, so they must exist here.
    package = runtime.root / DECOY_PACKAGE
    package.mkdir(parents=True)
    (package / "__init__.py").write_text(decoy_source())
    refusals = runtime.root / REFUSALS_DIR
    refusals.mkdir()
    for kind in REFUSAL_KINDS:
        (refusals / kind).write_text("")


def _run(argv: list[str], log: Path, extra_env: dict[str, str] | None = None) -> None:
    env = {**os.environ, **(extra_env or {})}
    env.pop("PYTHONPATH", None)
    env.pop("VIRTUAL_ENV", None)
    with log.open("a") as handle:
        handle.write(f"$ {' '.join(argv)}\n")
        handle.flush()
        result = subprocess.run(argv, stdout=handle, stderr=subprocess.STDOUT, env=env, check=False)
    if result.returncode != 0:
        tail = "\n".join(log.read_text().splitlines()[-15:])
        raise TrainFailError(f"runtime build step failed ({' '.join(argv[:4])} …), see {log}:\n{tail}")


def _make_readonly(root: Path) -> None:
    """Drop write bits so even the process backend cannot change the runtime by accident."""
    for directory, _, files in os.walk(root):
        for name in files:
            path = Path(directory) / name
            if not path.is_symlink():
                path.chmod(path.stat().st_mode & ~0o222)


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    with path.open("w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def list_runtimes() -> list[dict[str, object]]:
    """Metadata of every complete runtime on this host."""
    found = []
    for folder in sorted(runtimes_dir().glob("*")):
        meta = folder / "runtime.json"
        if folder.is_dir() and (folder / COMPLETE_MARKER).exists() and meta.exists():
            data = json.loads(meta.read_text())
            data["path"] = str(folder)
            found.append(data)
    return found
