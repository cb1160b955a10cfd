"""Case runtimes: the Python environment a case runs in, one per arm, built once.

A runtime is a virtual environment built from the arm's **lock**: every package of the arm's
requirement set in ``containers/runtime/`` resolved once to an exact version and the sha256 of
the one artifact installed on this platform (``requirements-<arm>-<variant>.lock``, committed;
``trainfail runtimes lock`` refreshes it). It is installed with ``--require-hashes --no-deps``
(by uv given pip's settings when uv is found, else by pip: :mod:`gym_trainfail.installer`; the
installed distributions are checked against the lock either way), so two machines that build
the same lock hold the same packages, whichever installer each used.

Its folder name carries a content hash of its inputs (the lock, the accelerator variant, the
interpreter version, build hooks, blocker), so a changed input builds a new runtime and an
unchanged one is reused; grading receipts are keyed by that hash too. Sandboxes mount it
read-only at the same path (console-script shebangs hold that path).

The accelerator **variant** (``$TRAINFAIL_RUNTIME_VARIANT``) is part of both the lock's name
and the runtime's hash (and of its Docker image's tag). ``cpu`` is torch's CPU build; ``cuda``
(``--accelerator cuda``) is torch's CUDA build with its ``nvidia-*`` libraries, from a lock of its
own, hence a different runtime. A CUDA lock must be resolved against PyPI (torch's plain
manylinux wheels are the CUDA builds): a pip configured to prefer local CPU wheels (``find-links``
with ``+cpu`` builds, a constraints file capping torch) resolves the CPU build instead, and the
lock is refused with what to change.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from gym_trainfail.arms import Arm, get_arm
from gym_trainfail.errors import RuntimeMissingError, TrainFailError
from gym_trainfail.hashing import bytes_digest
from gym_trainfail.installer import Installed, InstallError, install_locked
from gym_trainfail.paths import containers_dir, home, runtimes_dir

#: Bump when the build procedure changes in a way the inputs do not show.
BUILD_SCHEMA = "5"
#: Accelerator variants a runtime can be built for, each from its own lock.
VARIANTS = ("cpu", "cuda")
DEFAULT_VARIANT = "cpu"
VARIANT_ENV = "TRAINFAIL_RUNTIME_VARIANT"
#: What an sdist in a lock needs to build offline (pip's default for projects without
#: ``pyproject.toml``); pinned in the lock's header for the Docker image's wheelhouse.
SDIST_BUILD_TOOLS = ("setuptools>=40.8.0", "wheel")
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
    variant: str = DEFAULT_VARIANT

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


def runtime_variant() -> str:
    """The accelerator variant runtimes are built for: ``$TRAINFAIL_RUNTIME_VARIANT`` or ``cpu``."""
    variant = os.environ.get(VARIANT_ENV) or DEFAULT_VARIANT
    if variant not in VARIANTS:
        raise TrainFailError(f"{VARIANT_ENV}={variant!r} is not a runtime variant; known: {', '.join(VARIANTS)}")
    return variant


def runtime_digest(arm: Arm, python_version: str, variant: str | None = None) -> str:
    """Content hash of everything a runtime is built from: the lock (every pin and artifact
    hash), the accelerator variant, the Python version, the build hooks and the arm's hooks."""
    variant = variant or runtime_variant()
    lock = lock_path(arm, variant)
    parts = [
        f"schema={BUILD_SCHEMA}",
        f"python={python_version}",
        f"variant={variant}",
        f"arm={arm.name}",
        *resolve_requirements(arm.requirements_file),
        f"lock={bytes_digest(lock.read_bytes()) if lock.is_file() else 'missing'}",
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
    meta = json.loads((root / "runtime.json").read_text())
    return Runtime(
        arm=arm.name,
        root=root,
        digest=digest,
        base_prefix=Path(meta["base_prefix"]),
        python_version=version,
        variant=str(meta.get("variant", runtime_variant())),
    )


# -- locks -------------------------------------------------------------------------------------


def lock_path(arm: Arm, variant: str | None = None) -> Path:
    """The committed lock of an arm's runtime for one accelerator variant."""
    return containers_dir() / "runtime" / f"requirements-{arm.name}-{variant or runtime_variant()}.lock"


def platform_tag() -> str:
    """The platform a lock's artifacts are for (wheels differ by OS and CPU architecture)."""
    return f"{sys.platform}_{platform.machine()}"


def lock_inputs(arm: Arm, python_version: str, variant: str) -> str:
    """Digest of what a lock is resolved from; a lock whose header says otherwise is stale."""
    parts = [f"python={python_version}", f"variant={variant}", f"platform={platform_tag()}"]
    return bytes_digest("\n".join([*parts, *resolve_requirements(arm.requirements_file)]).encode())


@dataclass(frozen=True)
class Pin:
    """One locked package: ``name==version`` and the sha256 of its artifacts."""

    name: str
    version: str
    hashes: tuple[str, ...]

    @property
    def requirement(self) -> str:
        return f"{self.name}=={self.version}"

    def lines(self) -> str:
        return " \\\n".join([self.requirement, *(f"    --hash=sha256:{h}" for h in self.hashes)])


@dataclass(frozen=True)
class Lock:
    """A parsed lock file: its header fields, its pins, and the pinned sdist build tools."""

    path: Path
    fields: dict[str, str]
    pins: tuple[Pin, ...]
    build_tools: tuple[Pin, ...]


_PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==(\S+)((?:\s+--hash=sha256:[0-9a-f]{64})+)\s*$")


def read_lock(path: Path) -> Lock:
    """Parse a lock written by :func:`write_lock` (continuation lines joined)."""
    fields: dict[str, str] = {}
    pins: list[Pin] = []
    tools: list[Pin] = []
    text = path.read_text().replace("\\\n", " ")
    for raw in text.splitlines():
        line = raw.strip()
        if not line:
            continue
        if line.startswith("#"):
            body = line.lstrip("#").strip()
            key, sep, value = body.partition(":")
            if sep and key == "build-tool":
                tool = _parse_pin(value.strip(), path)
                tools.append(tool)
            elif sep and re.fullmatch(r"[a-z-]+", key):
                fields[key] = value.strip()
            continue
        pins.append(_parse_pin(line, path))
    return Lock(path=path, fields=fields, pins=tuple(pins), build_tools=tuple(tools))


def _parse_pin(line: str, path: Path) -> Pin:
    match = _PIN.match(line)
    if match is None:
        raise TrainFailError(f"{path}: not a hashed pin: {line[:120]!r}; refresh it with `trainfail runtimes lock`")
    hashes = tuple(re.findall(r"--hash=sha256:([0-9a-f]{64})", match.group(3)))
    return Pin(match.group(1), match.group(2), hashes)


def write_lock(path: Path, arm: Arm, python_version: str, variant: str, pins: list[Pin], tools: list[Pin]) -> None:
    """Write a lock: a header (what it was resolved from) and one hashed pin per package."""
    accelerator = "" if variant == DEFAULT_VARIANT else f" --accelerator {variant}"
    header = [
        f"# The locked {arm.name} runtime: every package of {arm.requirements} resolved to one version",
        "# and the sha256 of the artifact pip installs on this platform. Installed with",
        "# `pip install --require-hashes --no-deps`. Made by `trainfail runtimes lock "
        f"--arm {arm.name}{accelerator}`; do not edit by hand.",
        f"# inputs: {lock_inputs(arm, python_version, variant)}",
        f"# python: {python_version}",
        f"# platform: {platform_tag()}",
        f"# variant: {variant}",
    ]
    if tools:
        header.append("# What the sdists below need to build offline (the Docker image's wheelhouse):")
        header.extend(f"# build-tool: {tool.requirement} --hash=sha256:{tool.hashes[0]}" for tool in tools)
    body = [pin.lines() for pin in sorted(pins, key=lambda p: _normalize(p.name))]
    path.write_text("\n".join([*header, *body]) + "\n")


def _normalize(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def check_lock(arm: Arm, python_version: str, variant: str) -> Lock:
    """The arm's lock, refused with what to do when it is missing or stale."""
    path = lock_path(arm, variant)
    remedy = f"run `trainfail runtimes lock --arm {arm.name}` (resolves with pip, about a minute) and commit it"
    if not path.is_file():
        raise TrainFailError(f"the {arm.name!r} runtime has no lock for variant {variant!r} ({path}); {remedy}")
    lock = read_lock(path)
    if lock.fields.get("inputs") != lock_inputs(arm, python_version, variant):
        made = ", ".join(f"{k} {lock.fields.get(k, '?')}" for k in ("python", "platform", "variant"))
        raise TrainFailError(
            f"{path} is stale: it was resolved for {made} from another {arm.requirements}, not for "
            f"python {python_version}, platform {platform_tag()}, variant {variant} and the current "
            f"requirement set; {remedy}"
        )
    if not lock.pins:
        raise TrainFailError(f"{path} pins nothing; {remedy}")
    return lock


def lock_runtime(arm_name: str, *, progress: Progress = lambda _: None) -> Path:
    """Resolve the arm's requirement set with pip (a dry run in a scratch venv of the runtime's
    interpreter) and write its lock: every transitive pin with its artifact's sha256."""
    arm = get_arm(arm_name)
    variant = runtime_variant()
    pins, tools, version = resolve_lock(arm, progress=progress)
    path = lock_path(arm, variant)
    write_lock(path, arm, version, variant, pins, tools)
    progress(f"{path.name}: {len(pins)} packages pinned with hashes")
    return path


@dataclass(frozen=True)
class LockPlan:
    """What a lock of one arm and variant would pin (``--dry-run``: nothing is written)."""

    arm: str
    variant: str
    python: str
    torch: str
    accelerator_packages: tuple[str, ...]
    packages: int
    lock: str
    problem: str = ""


def plan_lock(arm_name: str, *, progress: Progress = lambda _: None) -> LockPlan:
    """Resolve like :func:`lock_runtime` (metadata only, no wheel downloads) and say what it
    would pin; a resolution the variant refuses is reported in ``problem``, not raised."""
    arm = get_arm(arm_name)
    variant = runtime_variant()
    try:
        pins, _, version = resolve_lock(arm, progress=progress, check=False)
    except TrainFailError as exc:
        return LockPlan(arm.name, variant, "?", "", (), 0, str(lock_path(arm, variant)), str(exc))
    return lock_plan(arm, variant, version, pins)


def lock_plan(arm: Arm, variant: str, version: str, pins: list[Pin]) -> LockPlan:
    """The summary of a resolution, with the variant's verdict on it."""
    torch = _torch_version(pins)
    accelerator = _accelerator_packages(pins)
    try:
        _check_variant(pins, variant, arm)
        problem = ""
    except TrainFailError as exc:
        problem = str(exc)
    return LockPlan(arm.name, variant, version, torch, accelerator, len(pins), str(lock_path(arm, variant)), problem)


def resolve_lock(
    arm: Arm, *, progress: Progress = lambda _: None, check: bool = True
) -> tuple[list[Pin], list[Pin], str]:
    """pip's resolution of the arm's requirement set for the current variant: (pins, build-tool
    pins, Python version). Raises when the variant refuses it (unless ``check`` is false)."""
    variant = runtime_variant()
    python = base_interpreter()
    version, _ = _interpreter_facts(python)
    env = variant_pip_env(variant)
    scratch_parent = home() / "tmp"
    scratch_parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="trainfail-lock-", dir=scratch_parent) as scratch:
        venv = Path(scratch) / "venv"
        log = Path(scratch) / "lock.log"
        progress(f"resolving {arm.requirements} with pip (python {version}, variant {variant})")
        _run([str(python), "-m", "venv", str(venv)], log)
        requirements = ["-r", str(arm.requirements_file)]
        pins, sdists = _resolve(venv / "bin" / "python", requirements, Path(scratch), log, env)
        tools: list[Pin] = []
        if sdists:
            progress(f"pinning the build tools of {', '.join(sdists)} (built from sdists)")
            tools, _ = _resolve(venv / "bin" / "python", list(SDIST_BUILD_TOOLS), Path(scratch), log, env)
    if check:
        _check_variant(pins, variant, arm)
    return pins, tools, version


#: pip settings that make it prefer local CPU wheels over PyPI's CUDA torch.
_LOCAL_PIP_SETTINGS = ("PIP_FIND_LINKS", "PIP_CONSTRAINT", "PIP_EXTRA_INDEX_URL", "PIP_NO_INDEX")


def cuda_pip_env() -> dict[str, str]:
    """pip's environment for resolving a CUDA lock: no config files (a host config may point at
    local CPU wheels or cap torch) and none of the settings that do the same from the
    environment; PyPI is the index (``$TRAINFAIL_CUDA_INDEX_URL`` overrides it)."""
    return {
        "PIP_CONFIG_FILE": os.devnull,
        "PIP_INDEX_URL": os.environ.get("TRAINFAIL_CUDA_INDEX_URL", "https://pypi.org/simple"),
        **dict.fromkeys(_LOCAL_PIP_SETTINGS, ""),
    }


def variant_pip_env(variant: str) -> dict[str, str]:
    """What pip needs in its environment to resolve or install a variant's packages: nothing for
    ``cpu`` (the host's pip settings reach its ``+cpu`` torch), :func:`cuda_pip_env` for ``cuda``
    (those settings would offer the CPU build under the CUDA build's pin, and the hash check
    would refuse it)."""
    return cuda_pip_env() if variant == "cuda" else {}


@dataclass(frozen=True)
class BuildPlan:
    """What ``runtimes build`` would install for one arm (``--dry-run``: pip resolves the lock
    from package metadata; nothing is downloaded, built or written)."""

    arm: str
    variant: str
    runtime: str
    lock: str
    torch: str
    packages: int
    wheels: int
    sdists: tuple[str, ...]
    accelerator_packages: tuple[str, ...]
    hooks: tuple[str, ...]
    built: bool
    problems: tuple[str, ...] = ()


def plan_build(arm_name: str, *, progress: Progress = lambda _: None) -> BuildPlan:
    """Check, without installing anything, that the arm's lock installs here: pip resolves it in
    hash-checking mode *with* dependencies (a dependency missing from the lock is refused), from
    the index the variant installs from, and every artifact it picks must be a pin of the lock
    carrying one of the pin's hashes. Problems are reported in ``problems``, not raised."""
    arm = get_arm(arm_name)
    variant = runtime_variant()
    python = base_interpreter()
    root, _, version, _ = runtime_root(arm, python)
    lock = check_lock(arm, version, variant)
    problems: list[str] = []
    resolved: list[Pin] = []
    sdists: list[str] = []
    scratch_parent = home() / "tmp"
    scratch_parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="trainfail-plan-", dir=scratch_parent) as scratch:
        venv, log = Path(scratch) / "venv", Path(scratch) / "plan.log"
        progress(f"resolving {lock.path.name} with pip in hash-checking mode (python {version}, variant {variant})")
        _run([str(python), "-m", "venv", str(venv)], log)
        requirements = ["--require-hashes", "-r", str(lock.path)]
        try:
            pip_env = variant_pip_env(variant)
            resolved, sdists = _resolve(venv / "bin" / "python", requirements, Path(scratch), log, pip_env)
        except TrainFailError as exc:
            problems.append(f"pip cannot install the lock as it stands: {exc}")
    problems.extend(_lock_mismatches(lock, resolved) if resolved else [])
    try:
        _check_variant(list(lock.pins), variant, arm)
    except TrainFailError as exc:
        problems.append(str(exc))
    return BuildPlan(
        arm=arm.name,
        variant=variant,
        runtime=str(root),
        lock=str(lock.path),
        torch=_torch_version(list(lock.pins)),
        packages=len(lock.pins),
        wheels=len(resolved) - len(sdists),
        sdists=tuple(sdists),
        accelerator_packages=_accelerator_packages(list(lock.pins)),
        hooks=(*arm_hooks(arm), *(script.name for script in postbuild_scripts())),
        built=(root / COMPLETE_MARKER).exists(),
        problems=tuple(problems),
    )


def _torch_version(pins: list[Pin]) -> str:
    return next((p.version for p in pins if _normalize(p.name) == "torch"), "")


def _accelerator_packages(pins: list[Pin]) -> tuple[str, ...]:
    return tuple(sorted(p.name for p in pins if _normalize(p.name).startswith(("nvidia-", "triton"))))


def _lock_mismatches(lock: Lock, resolved: list[Pin]) -> list[str]:
    """Where pip's choice differs from the lock: a package not pinned, a pin not installed, a
    version or an artifact hash the lock does not hold."""
    pinned = {_normalize(p.name): p for p in lock.pins}
    chosen = {_normalize(p.name): p for p in resolved}
    problems = [f"{chosen[n].requirement} would be installed, not pinned" for n in sorted(chosen.keys() - pinned)]
    problems += [f"{pinned[n].requirement} is pinned, would not be installed" for n in sorted(pinned.keys() - chosen)]
    for name in sorted(pinned.keys() & chosen.keys()):
        pin, pick = pinned[name], chosen[name]
        if pick.version != pin.version:
            problems.append(f"{pin.name}: the lock pins {pin.version}, pip picks {pick.version}")
        elif not set(pick.hashes) & set(pin.hashes):
            problems.append(f"{pin.requirement}: pip's artifact has sha256 {pick.hashes[0][:16]}…, not one in the lock")
    return problems


def _resolve(
    python: Path, requirements: list[str], scratch: Path, log: Path, env: dict[str, str] | None = None
) -> tuple[list[Pin], list[str]]:
    """pip's resolution of ``requirements`` (``install --dry-run --report``), as hashed pins,
    with the names of the packages whose artifact is an sdist."""
    report = scratch / f"report-{len(list(scratch.glob('report-*')))}.json"
    _run(
        [
            str(python),
            "-m",
            "pip",
            "install",
            "--no-input",
            "--dry-run",
            "--ignore-installed",
            "--quiet",
            "--report",
            str(report),
            *requirements,
        ],
        log,
        extra_env={"DS_BUILD_OPS": "0", "PIP_DISABLE_PIP_VERSION_CHECK": "1", **(env or {})},
    )
    pins, sdists = [], []
    for item in json.loads(report.read_text())["install"]:
        name, version = item["metadata"]["name"], item["metadata"]["version"]
        info = item.get("download_info") or {}
        url = str(info.get("url", ""))
        if "archive_info" not in info:
            where = url or "a local folder"
            raise TrainFailError(f"{name} resolved to {where}, not a released artifact; pin a release")
        pins.append(Pin(name, version, (_artifact_sha256(info, url),)))
        if not urllib.parse.urlparse(url).path.endswith(".whl"):
            sdists.append(name)
    return pins, sdists


def _artifact_sha256(info: dict[str, object], url: str) -> str:
    archive = info.get("archive_info")
    hashes = archive.get("hashes") if isinstance(archive, dict) else None
    if isinstance(hashes, dict) and "sha256" in hashes:
        return str(hashes["sha256"])
    digest = hashlib.sha256()
    parsed = urllib.parse.urlparse(url)
    if parsed.scheme == "file":
        with open(urllib.request.url2pathname(parsed.path), "rb") as handle:
            for chunk in iter(lambda: handle.read(1 << 20), b""):
                digest.update(chunk)
    else:
        with urllib.request.urlopen(url, timeout=300) as response:  # noqa: S310 - pip's own URL
            for chunk in iter(lambda: response.read(1 << 20), b""):
                digest.update(chunk)
    return digest.hexdigest()


def _check_variant(pins: list[Pin], variant: str, arm: Arm) -> None:
    """A ``cpu`` lock must hold torch's CPU build: no CUDA libraries, a ``+cpu`` torch; a
    ``cuda`` lock torch's CUDA build: a torch without ``+cpu`` and its ``nvidia-*`` libraries."""
    if variant == "cuda":
        torch_pins = [p for p in pins if _normalize(p.name) == "torch"]
        nvidia = [p.name for p in pins if _normalize(p.name).startswith("nvidia-")]
        if not torch_pins or "+cpu" in torch_pins[0].version or not nvidia:
            found = f"torch {torch_pins[0].version}" if torch_pins else "no torch"
            raise TrainFailError(
                f"pip resolved {arm.requirements} to {found} without CUDA libraries (nvidia-*), not the CUDA "
                "build the 'cuda' variant needs. A CUDA lock needs PyPI's metadata for torch's manylinux wheel "
                "(it depends on nvidia-cublas-cu12 …): run it where https://pypi.org/simple (or "
                "$TRAINFAIL_CUDA_INDEX_URL) answers; the lock ignores pip's config files and PIP_FIND_LINKS/"
                "PIP_CONSTRAINT/PIP_EXTRA_INDEX_URL, which on this kind of machine point at local CPU wheels "
                "(find-links /opt/wheels) and cap torch (/etc/xdg/pip/constraints.txt)"
            )
        return
    if variant != "cpu":
        return
    cuda = _accelerator_packages(pins)
    torch = [p for p in pins if _normalize(p.name) == "torch"]
    if cuda or (torch and "+cpu" not in torch[0].version):
        found = f"torch {torch[0].version}" if torch else "no torch"
        raise TrainFailError(
            f"pip resolved {arm.requirements} to a CUDA build ({found}; {', '.join(cuda) or 'no CUDA packages'}), "
            "not the CPU build the 'cpu' variant needs; make torch's CPU wheel reachable (e.g. "
            "PIP_EXTRA_INDEX_URL=https://download.pytorch.org/whl/cpu) and lock again"
        )


Progress = Callable[[str], None]


def build_runtime(arm_name: str, *, progress: Progress = lambda _: None, force: bool = False) -> Runtime:
    """Build (or reuse) the runtime of an arm. Safe against concurrent builders."""
    arm = get_arm(arm_name)
    python = base_interpreter()
    variant = runtime_variant()
    root, digest, version, base_prefix = runtime_root(arm, python)
    lock = check_lock(arm, version, variant)
    root.parent.mkdir(parents=True, exist_ok=True)
    with _locked(root.with_name(root.name + ".lock")):
        if (root / COMPLETE_MARKER).exists() and not force:
            progress(f"runtime {root.name} is up to date")
            return find_runtime(arm.name)
        if root.exists():
            shutil.rmtree(root)
        root.mkdir()
        runtime = Runtime(
            arm=arm.name, root=root, digest=digest, base_prefix=base_prefix, python_version=version, variant=variant
        )
        log = root / "build.log"
        started = time.monotonic()
        installed = _install_lock(runtime, python, lock, log, progress)
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
            "variant": variant,
            "lock": f"{lock.path.name} {bytes_digest(lock.path.read_bytes())}",
            "base_prefix": str(base_prefix),
            "packages": freeze,
            "build_seconds": round(time.monotonic() - started, 1),
            # How, not what: the digest (and so the folder name) never depends on the installer.
            "installer": installed.installer,
            "install_seconds": installed.seconds,
            **({"installer_fallback": installed.fallback} if installed.fallback else {}),
        }
        (root / "runtime.json").write_text(json.dumps(meta, indent=2))
        _make_readonly(root)
        (root / COMPLETE_MARKER).write_text(digest)
        progress(f"runtime {root.name} built in {meta['build_seconds']} s")
        return runtime


def _install_lock(runtime: Runtime, python: Path, lock: Lock, log: Path, progress: Progress) -> Installed:
    """A fresh venv with the lock installed, hash-checked (:mod:`gym_trainfail.installer`: uv
    with pip's settings when it is usable, pip otherwise; the same packages either way)."""

    def make_venv() -> None:
        if runtime.venv.exists():
            shutil.rmtree(runtime.venv)
        progress(f"creating virtual environment with {python}")
        _run([str(python), "-m", "venv", str(runtime.venv)], log)

    make_venv()
    torch = _torch_version(list(lock.pins)) or "none"
    env = {**os.environ, "DS_BUILD_OPS": "0", "PIP_DISABLE_PIP_VERSION_CHECK": "1", **variant_pip_env(runtime.variant)}
    try:
        installed = install_locked(
            runtime.python, lock.path, lock.pins, log=log, env=env, reset=make_venv, progress=progress
        )
    except InstallError as exc:
        raise TrainFailError(f"runtime build step failed: {exc}") from None
    fallback = f" (uv not used: {installed.fallback})" if installed.fallback else ""
    progress(f"installed {len(lock.pins)} packages (torch {torch}) with {installed.installer} in {installed.seconds} s"
             f"{fallback}")  # fmt: skip
    return installed


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
