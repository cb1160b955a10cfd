"""Runtime images for the Docker backend: one per arm, content-hashed, built offline.

An image holds the same runtime as the bubblewrap backend: the build runs the same builder
(:func:`gym_trainfail.runtimes.build_runtime`) inside the image, from the same lock
(``containers/runtime/requirements-<arm>-<variant>.lock``, installed with ``--require-hashes``,
by the host's uv carried in the build context, or by pip when the host has no uv), so both
backends hold the same packages. Nothing is fetched during the build (network none):

* **wheelhouse**: ``pip download --no-deps --require-hashes`` of exactly the lock's artifacts
  (and the build tools its sdists need, pinned in its header) into
  ``$TRAINFAIL_HOME/wheelhouse``; shared by every arm and every later build, found by hash.
* **base image**: any image with Python 3 (the host runtime's minor version), ``venv`` and a
  C++ compiler (``--base``, or ``$TRAINFAIL_BASE_IMAGE``). The default, ``local``, is made
  here when no registry is reachable: ``containers/base/build-base.sh`` (debootstrap
  ``--variant=minbase bookworm`` + ``docker import``).

An image's tag is a digest of its inputs (the runtime's digest, which covers the lock, the
variant and the Python version; Dockerfile, PID-1 script, builder sources, the arm's runtime
files, the locked artifacts, the base image id), so an unchanged image is never rebuilt and a
new lock gives a new tag.
Labels say which runtime it holds; the Docker backend picks images by those labels.
"""

from __future__ import annotations

import ast
import contextlib
import os
import re
import subprocess
import tarfile
import tempfile
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gym_trainfail.arms import Arm, get_arm
from gym_trainfail.errors import SandboxUnavailableError, TrainFailError
from gym_trainfail.hashing import bytes_digest, file_digest
from gym_trainfail.installer import find_uv
from gym_trainfail.paths import containers_dir, home
from gym_trainfail.runtimes import (
    DECOY_MODULE,
    DEFAULT_VARIANT,
    Pin,
    Runtime,
    arm_hooks,
    build_runtime,
    check_lock,
    lock_path,
    postbuild_scripts,
)
from gym_trainfail.sandbox.docker_engine import LABEL, Engine, connect, docker_host, engine_errors

#: ``--base`` value that means "the base image made locally with debootstrap".
LOCAL_BASE = "local"
IMAGE_REPOSITORY = "gym-trainfail/runtime"
BASE_REPOSITORY = "gym-trainfail/base"
#: ``$TRAINFAIL_HOME`` inside the image: runtimes live under ``/opt/trainfail/runtimes``.
IMAGE_HOME = "/opt/trainfail"
#: Bump when the image build changes in a way its inputs do not show.
IMAGE_SCHEMA = "1"

KIND_LABEL = f"{LABEL}.kind"
ARM_LABEL = f"{LABEL}.arm"
DIGEST_LABEL = f"{LABEL}.runtime-digest"
ROOT_LABEL = f"{LABEL}.runtime-root"
PYTHON_LABEL = f"{LABEL}.python"
BASE_LABEL = f"{LABEL}.base"
INPUTS_LABEL = f"{LABEL}.inputs"

Progress = Callable[[str], None]


def _quiet(_: str) -> None:
    return None


def default_base() -> str:
    """The base image builds use unless told: ``$TRAINFAIL_BASE_IMAGE`` or the local one."""
    return os.environ.get("TRAINFAIL_BASE_IMAGE") or LOCAL_BASE


@dataclass(frozen=True)
class RuntimeImage:
    """A built runtime image and what its labels say about the runtime inside."""

    id: str
    tag: str
    arm: str
    runtime_digest: str
    runtime_root: str
    python_version: str
    base: str

    def container_runtime(self) -> Runtime:
        """The runtime as commands inside the container see it (only its paths are used)."""
        return Runtime(
            arm=self.arm,
            root=Path(self.runtime_root),
            digest=self.runtime_digest,
            base_prefix=Path("/usr"),
            python_version=self.python_version,
        )

    @classmethod
    def from_labels(cls, image_id: str, tag: str, labels: dict[str, str]) -> RuntimeImage:
        return cls(
            id=image_id,
            tag=tag,
            arm=labels[ARM_LABEL],
            runtime_digest=labels[DIGEST_LABEL],
            runtime_root=labels[ROOT_LABEL],
            python_version=labels[PYTHON_LABEL],
            base=labels.get(BASE_LABEL, "?"),
        )


# -- finding images ----------------------------------------------------------------------------


def runtime_images(engine: Engine, *, arm: str | None = None, digest: str | None = None) -> list[RuntimeImage]:
    """Runtime images in the engine, newest first, optionally for one arm and runtime digest."""
    filters = [f"{KIND_LABEL}=runtime"]
    if arm is not None:
        filters.append(f"{ARM_LABEL}={arm}")
    if digest is not None:
        filters.append(f"{DIGEST_LABEL}={digest}")
    images = engine.client.images.list(filters={"label": filters})
    images.sort(key=lambda image: str(image.attrs.get("Created", "")), reverse=True)
    found = []
    for image in images:
        tags = [t for t in image.tags if t.startswith(IMAGE_REPOSITORY + ":")]
        found.append(RuntimeImage.from_labels(str(image.id), tags[0] if tags else str(image.id), image.labels))
    return found


def find_runtime_image(engine: Engine, runtime: Runtime, base: str | None = None) -> RuntimeImage:
    """The image holding ``runtime`` (same arm and content hash), preferring base ``base``.

    Raises :class:`SandboxUnavailableError` saying how to build it when there is none.
    """
    candidates = runtime_images(engine, arm=runtime.arm, digest=runtime.digest)
    wanted = base or os.environ.get("TRAINFAIL_BASE_IMAGE")
    preferred = [image for image in candidates if wanted is None or image.base == wanted]
    if preferred or candidates:
        return (preferred or candidates)[0]
    raise SandboxUnavailableError(
        f"the Docker engine at DOCKER_HOST={docker_host()!r} has no image with the {runtime.arm!r} runtime "
        f"{runtime.digest[:16]}; build it with `trainfail images build --arm {runtime.arm}` "
        "(a few minutes, offline), or use sandbox='bwrap'"
    )


# -- inputs and tags ---------------------------------------------------------------------------


def dockerfile() -> Path:
    """The runtime image's Dockerfile."""
    return containers_dir() / "Dockerfile"


def init_script() -> Path:
    """PID 1 of sandbox containers (``containers/sandbox_init.py``)."""
    return containers_dir() / "sandbox_init.py"


def base_recipe() -> list[Path]:
    """The files the local base image is made from."""
    folder = containers_dir() / "base"
    return [folder / "build-base.sh", folder / "packages.txt"]


def builder_modules() -> list[Path]:
    """``gym_trainfail`` modules the runtime builder needs: ``runtimes`` and what it imports."""
    package = Path(__file__).resolve().parent.parent
    pending, seen = ["runtimes"], set()
    while pending:
        name = pending.pop()
        if name in seen:
            continue
        seen.add(name)
        tree = ast.parse((package / f"{name}.py").read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("gym_trainfail."):
                pending.append(node.module.split(".", 1)[1])
    return sorted(package / f"{name}.py" for name in seen)


def _requirement_files(path: Path) -> list[Path]:
    files = [path]
    for line in path.read_text().splitlines():
        include = re.match(r"^\s*(-r|--requirement)\s+(\S+)", line)
        if include:
            files += _requirement_files(path.parent / include.group(2))
    return files


def runtime_files(arm: Arm) -> list[Path]:
    """Files under ``containers/runtime`` the arm's runtime is built from (and nothing else:
    the control image's build never sees a file of the other arm)."""
    folder = containers_dir() / "runtime"
    hooks = [folder / ("blocker" if arm.blocks_traincheck else "tracker") / name for name in arm_hooks(arm)]
    if arm.blocks_traincheck:
        hooks.append(folder / "blocker" / DECOY_MODULE)
    lock = lock_path(arm)
    locks = [lock] if lock.is_file() else []
    return sorted({*_requirement_files(arm.requirements_file), *locks, *hooks, *postbuild_scripts()})


def locked_artifacts(runtime: Runtime) -> list[Pin]:
    """What the image's wheelhouse must hold: the runtime's lock, and the build tools of its sdists."""
    lock = check_lock(get_arm(runtime.arm), runtime.python_version, runtime.variant)
    return [*lock.pins, *lock.build_tools]


def artifact_lines(pins: Iterable[Pin]) -> list[str]:
    """``name==version sha256:…`` per artifact: the package list an image's tag covers."""
    return sorted(f"{pin.requirement} {' '.join(f'sha256:{h}' for h in pin.hashes)}" for pin in pins)


def image_inputs(arm: Arm, runtime: Runtime, packages: Iterable[str], base_id: str) -> str:
    """Content hash of everything an image is built from."""
    context = containers_dir().parent
    files = [dockerfile(), init_script(), *runtime_files(arm)]
    parts = [
        f"schema={IMAGE_SCHEMA}",
        f"arm={arm.name}",
        f"runtime={runtime.digest}",
        f"base={base_id}",
        *(f"{p.relative_to(context)}:{file_digest(p)}" for p in files),
        *(f"builder/{p.name}:{file_digest(p)}" for p in builder_modules()),
        *packages,
    ]
    return bytes_digest("\n".join(parts).encode())


# -- base image --------------------------------------------------------------------------------


def local_base_tag() -> str:
    """Tag of the debootstrap base image: a digest of its recipe."""
    digest = bytes_digest(b"".join(file_digest(p).encode() for p in base_recipe()))
    return f"{BASE_REPOSITORY}:bookworm-{digest[:12]}"


def ensure_base(engine: Engine, base: str, progress: Progress = _quiet) -> tuple[str, str]:
    """``(reference, image id)`` of the base image, building the local one when needed."""
    reference = local_base_tag() if base == LOCAL_BASE else base
    image_id = _image_id(engine, reference)
    if image_id is not None:
        return reference, image_id
    if base == LOCAL_BASE:
        progress(f"building the local base image {reference} (debootstrap, about 2 minutes)")
        _build_local_base(reference)
    else:
        progress(f"pulling the base image {reference}")
        try:
            engine.client.images.pull(reference)
        except engine_errors() as exc:
            raise TrainFailError(
                f"the base image {reference!r} is not in the engine and cannot be pulled ({exc}); load it "
                f"(`docker load`), or omit --base to use the local debootstrap base"
            ) from None
    image_id = _image_id(engine, reference)
    if image_id is None:
        raise TrainFailError(f"the base image {reference!r} is still missing after building it")
    return reference, image_id


def _image_id(engine: Engine, reference: str) -> str | None:
    try:
        return str(engine.client.images.get(reference).id)
    except engine_errors():
        return None


def _build_local_base(tag: str) -> None:
    script = base_recipe()[0]
    env = {**os.environ, "DOCKER_HOST": docker_host()}
    result = subprocess.run(["bash", str(script), tag], capture_output=True, text=True, env=env, check=False)
    if result.returncode != 0:
        tail = "\n".join((result.stderr or result.stdout).strip().splitlines()[-20:])
        raise TrainFailError(f"building the local base image failed ({script}):\n{tail}")


# -- wheelhouse --------------------------------------------------------------------------------


def wheelhouse_dir() -> Path:
    """Wheels of every package any runtime image holds, shared across arms and builds."""
    return home() / "wheelhouse"


def _normalize(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _artifact_key(path: Path) -> str:
    """The normalized project name at the start of a wheel or sdist file name."""
    stem = path.name.removesuffix(".whl").removesuffix(".tar.gz").removesuffix(".zip")
    return _normalize(stem.split("-")[0])


def prepare_wheelhouse(runtime: Runtime, pins: list[Pin], progress: Progress = _quiet) -> list[Path]:
    """The artifacts of exactly ``pins``, found by sha256, downloading only missing ones."""
    folder = wheelhouse_dir()
    folder.mkdir(parents=True, exist_ok=True)
    digests: dict[Path, str] = {}
    missing = [pin for pin in pins if _find_artifact(folder, pin, digests) is None]
    if missing:
        progress(f"fetching {len(missing)} locked artifact(s) into {folder} (pip download, hash-checked)")
        _pip_download(runtime, folder, missing)
    found = []
    for pin in pins:
        artifact = _find_artifact(folder, pin, digests)
        if artifact is None:
            raise TrainFailError(f"pip download produced no artifact for {pin.requirement} with the locked hash")
        found.append(artifact)
    return found


def _find_artifact(folder: Path, pin: Pin, digests: dict[Path, str]) -> Path | None:
    for path in sorted(folder.iterdir()):
        if not path.is_file() or _artifact_key(path) != _normalize(pin.name):
            continue
        if path not in digests:
            digests[path] = file_digest(path)
        if digests[path].removeprefix("sha256:") in pin.hashes:
            return path
    return None


def _pip_download(runtime: Runtime, folder: Path, pins: list[Pin]) -> None:
    # The runtime's own pip; --require-hashes: what lands in the wheelhouse is what the lock names.
    with tempfile.NamedTemporaryFile("w", suffix=".txt", dir=_scratch(), delete=False) as handle:
        handle.write("\n".join(pin.lines() for pin in pins) + "\n")
        requirements = Path(handle.name)
    argv = [str(runtime.python), "-m", "pip", "download", "--no-deps", "--require-hashes", "-d", str(folder)]
    env = {**os.environ, "DS_BUILD_OPS": "0", "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    env.pop("PYTHONPATH", None)
    try:
        result = subprocess.run([*argv, "-r", str(requirements)], capture_output=True, text=True, env=env, check=False)
    finally:
        requirements.unlink()
    if result.returncode != 0:
        tail = "\n".join((result.stderr or result.stdout).strip().splitlines()[-15:])
        raise TrainFailError(f"pip download failed for the image's wheelhouse:\n{tail}")


# -- build -------------------------------------------------------------------------------------


def image_tag(arm: Arm, inputs: str, variant: str = DEFAULT_VARIANT) -> str:
    """``gym-trainfail/runtime:<arm>-<inputs digest>`` for the ``cpu`` variant (the tags images
    built before variants existed carry), ``<arm>-<variant>-<inputs digest>`` for the others."""
    infix = "" if variant == DEFAULT_VARIANT else f"{variant}-"
    return f"{IMAGE_REPOSITORY}:{arm.name}-{infix}{inputs[:16]}"


#: Where the build context carries the host's uv (the Dockerfile installs with it when present).
CONTEXT_UV = "builder/bin/uv"


def context_installer(progress: Progress = _quiet) -> Path | None:
    """The uv executable the image build installs the runtime with: the one the host's runtime
    builds use (:func:`gym_trainfail.installer.find_uv`), or ``None`` (the build uses pip)."""
    uv, why = find_uv()
    if uv is None:
        progress(f"the image build installs with pip: {why}")
        return None
    progress(f"the image build installs with {uv.label} (the host's, {uv.path})")
    return uv.path


def write_context(target: Path, arm: Arm, wheels: list[Path], uv: Path | None = None) -> None:
    """The build context as a tar file: Dockerfile, PID-1 script, builder, the arm's files, wheels,
    and the installer (``uv``; absent, the build installs with pip)."""
    containers = containers_dir()
    with tarfile.open(target, "w") as tar:
        tar.add(dockerfile(), "Dockerfile")
        tar.add(init_script(), "sandbox_init.py")
        tar.addfile(tarfile.TarInfo("builder/gym_trainfail/__init__.py"))
        for module in builder_modules():
            tar.add(module, f"builder/gym_trainfail/{module.name}")
        for path in runtime_files(arm):
            tar.add(path, f"builder/containers/{path.relative_to(containers)}")
        for wheel in wheels:
            tar.add(wheel, f"builder/wheels/{wheel.name}")
        if uv is not None:
            # A static binary: it runs in any glibc base image, with no Python package around it.
            tar.add(uv.resolve(), CONTEXT_UV)


@dataclass(frozen=True)
class BuildPlan:
    """What building one arm's image involves, computed before anything is built."""

    arm: Arm
    runtime: Runtime
    packages: list[str]
    artifacts: list[Pin]
    base: str
    base_id: str
    tag: str
    labels: dict[str, str]


def plan_image(engine: Engine, arm_name: str, base: str | None = None, progress: Progress = _quiet) -> BuildPlan:
    """Resolve the host runtime (built if missing), the base image and the image's tag."""
    arm = get_arm(arm_name)
    runtime = build_runtime(arm.name, progress=progress)
    artifacts = locked_artifacts(runtime)
    packages = artifact_lines(artifacts)
    base_ref, base_id = ensure_base(engine, base or default_base(), progress)
    inputs = image_inputs(arm, runtime, packages, base_id)
    labels = {
        KIND_LABEL: "runtime",
        ARM_LABEL: arm.name,
        DIGEST_LABEL: runtime.digest,
        ROOT_LABEL: f"{IMAGE_HOME}/runtimes/{runtime.root.name}",
        PYTHON_LABEL: runtime.python_version,
        BASE_LABEL: base or default_base(),
        f"{LABEL}.base-image": base_ref,
        INPUTS_LABEL: inputs,
    }
    return BuildPlan(
        arm, runtime, packages, artifacts, base_ref, base_id, image_tag(arm, inputs, runtime.variant), labels
    )


def build_image(
    arm_name: str, *, base: str | None = None, force: bool = False, progress: Progress = _quiet
) -> RuntimeImage:
    """Build (or reuse) the runtime image of an arm; returns what the sandbox will use."""
    engine = connect()
    plan = plan_image(engine, arm_name, base, progress)
    if not force and _image_id(engine, plan.tag) is not None:
        progress(f"image {plan.tag} is up to date")
        return _described(engine, plan.tag)
    wheels = prepare_wheelhouse(plan.runtime, plan.artifacts, progress)
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="trainfail-image-", dir=_scratch()) as scratch:
        context = Path(scratch) / "context.tar"
        write_context(context, plan.arm, wheels, context_installer(progress))
        size = context.stat().st_size / 2**20
        progress(f"building {plan.tag} on {plan.base} ({size:.0f} MiB context; several minutes)")
        _run_build(engine, plan, context, progress)
    progress(f"image {plan.tag} built in {time.monotonic() - started:.0f} s")
    _remove_builder_leftovers(engine)
    _remove_superseded(engine, plan)
    return _described(engine, plan.tag)


def _remove_superseded(engine: Engine, plan: BuildPlan) -> None:
    """Drop older images of the same arm and base (changed inputs); images in use are kept."""
    labels = [f"{KIND_LABEL}=runtime", f"{ARM_LABEL}={plan.arm.name}", f"{BASE_LABEL}={plan.labels[BASE_LABEL]}"]
    for image in engine.client.images.list(filters={"label": labels}):
        if plan.tag in image.tags:
            continue
        with contextlib.suppress(*engine_errors()):
            engine.client.images.remove(str(image.id), noprune=False)


def _remove_builder_leftovers(engine: Engine) -> None:
    """Drop the builder stage's untagged images (gigabytes; no later build can reuse them)."""
    with contextlib.suppress(*engine_errors()):
        engine.client.images.prune(filters={"dangling": True, "label": f"{KIND_LABEL}=builder"})


def _scratch() -> Path:
    folder = home() / "tmp"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def build_log(tag: str) -> Path:
    """Where the engine's output of an image build is kept."""
    return home() / "images" / (tag.replace("/", "_").replace(":", "_") + ".log")


def _run_build(engine: Engine, plan: BuildPlan, context: Path, progress: Progress) -> None:
    log = build_log(plan.tag)
    log.parent.mkdir(parents=True, exist_ok=True)
    buildargs = {
        "BASE_IMAGE": plan.base_id,
        "ARM": plan.arm.name,
        "RUNTIME_NAME": plan.runtime.root.name,
        "RUNTIME_DIGEST": plan.runtime.digest,
    }
    with context.open("rb") as handle, log.open("w") as out:
        stream = engine.client.api.build(
            fileobj=handle,
            custom_context=True,
            tag=plan.tag,
            buildargs=buildargs,
            labels=plan.labels,
            network_mode="none",
            rm=True,
            forcerm=True,
            pull=False,
            decode=True,
        )
        _follow_build(stream, out, progress, log)


def _follow_build(stream: Iterable[dict[str, Any]], out: Any, progress: Progress, log: Path) -> None:
    for chunk in stream:
        text = str(chunk.get("stream") or chunk.get("status") or "")
        if text:
            out.write(text)
            # One chunk may hold several lines (the builder's own progress among them).
            for line in text.strip().splitlines():
                if line.startswith(("Step ", "runtime ", "installing", "installed")):
                    progress(line[:160])
        if "error" in chunk:
            out.write(f"ERROR: {chunk['error']}\n")
            out.flush()
            tail = "\n".join(log.read_text().strip().splitlines()[-25:])
            raise TrainFailError(f"the image build failed ({chunk['error']}); full log in {log}:\n{tail}")


def _described(engine: Engine, tag: str) -> RuntimeImage:
    image = engine.client.images.get(tag)
    return RuntimeImage.from_labels(str(image.id), tag, image.labels)


def list_images() -> list[dict[str, object]]:
    """Every runtime image in the engine, as plain data (for ``trainfail images list``)."""
    engine = connect()
    return [
        {"tag": i.tag, "arm": i.arm, "runtime": i.runtime_digest[:16], "base": i.base, "id": i.id[:19]}
        for i in runtime_images(engine)
    ]
