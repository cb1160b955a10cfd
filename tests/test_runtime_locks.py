"""Locked runtimes: the committed locks, what a runtime's hash covers, and that a changed lock
voids grading receipts and gives a new image tag. Fast: nothing here resolves or installs."""

from __future__ import annotations

import hashlib
import json
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from gym_trainfail import arms, runtimes
from gym_trainfail.arms import ARMS, get_arm
from gym_trainfail.cases import CaseSpec
from gym_trainfail.errors import TrainFailError
from gym_trainfail.files import write_json
from gym_trainfail.grading import Grader, Receipt, ScenarioOutcome
from gym_trainfail.paths import containers_dir
from gym_trainfail.runtimes import (
    Pin,
    Runtime,
    check_lock,
    lock_path,
    read_lock,
    runtime_digest,
    write_lock,
)

PYTHON = f"{sys.version_info.major}.{sys.version_info.minor}"


@pytest.fixture
def containers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A writable copy of ``containers/`` that the arms and the runtime builder read instead."""
    copy = tmp_path / "containers"
    shutil.copytree(containers_dir(), copy)
    monkeypatch.setattr(arms, "containers_dir", lambda: copy)
    monkeypatch.setattr(runtimes, "containers_dir", lambda: copy)
    monkeypatch.delenv(runtimes.VARIANT_ENV, raising=False)
    yield copy


def _change_a_hash(lock: Path) -> None:
    text = lock.read_text()
    first = read_lock(lock).pins[0].hashes[0]
    lock.write_text(text.replace(first, "0" * 64, 1))


@pytest.mark.parametrize("arm_name", sorted(ARMS))
def test_every_arm_has_a_committed_cpu_lock_of_hashed_pins(arm_name: str) -> None:
    arm = get_arm(arm_name)
    lock = read_lock(lock_path(arm, "cpu"))
    assert lock.fields["variant"] == "cpu"
    names = {runtimes._normalize(pin.name): pin for pin in lock.pins}
    # Every requirement of the arm's set is pinned, transitive dependencies with it.
    for line in runtimes.resolve_requirements(arm.requirements_file):
        name, version = line.split("==")
        assert names[runtimes._normalize(name)].version.split("+")[0] == version
    assert len(lock.pins) > len(runtimes.resolve_requirements(arm.requirements_file))
    assert all(pin.hashes and all(len(h) == 64 for h in pin.hashes) for pin in lock.pins)
    # The CPU build of torch, never a CUDA one.
    assert names["torch"].version.endswith("+cpu")
    assert not [name for name in names if name.startswith("nvidia-") or name == "triton"]
    assert ("traincheck" in names) == (arm_name == "traincheck")
    # DeepSpeed is an sdist: the lock pins what building it offline needs.
    assert {runtimes._normalize(t.name) for t in lock.build_tools} >= {"setuptools", "wheel"}
    if lock.fields["python"] == PYTHON and lock.fields["platform"] == runtimes.platform_tag():
        assert check_lock(arm, PYTHON, "cpu").pins == lock.pins


@pytest.mark.parametrize("arm_name", sorted(ARMS))
def test_every_arm_has_a_committed_cuda_lock_matching_its_cpu_lock(arm_name: str) -> None:
    arm = get_arm(arm_name)
    cuda, cpu = read_lock(lock_path(arm, "cuda")), read_lock(lock_path(arm, "cpu"))
    assert cuda.fields["variant"] == "cuda"
    assert "--accelerator cuda" in lock_path(arm, "cuda").read_text().splitlines()[2]
    pins = {runtimes._normalize(pin.name): pin for pin in cuda.pins}
    # torch's CUDA build (PyPI's manylinux wheel) of the same release as the CPU lock's, with the
    # CUDA libraries it needs; everything else the two locks share is pinned to the same version.
    cpu_pins = {runtimes._normalize(pin.name): pin for pin in cpu.pins}
    assert pins["torch"].version == cpu_pins["torch"].version.removesuffix("+cpu")
    assert {"nvidia-nccl-cu13", "nvidia-cublas", "nvidia-cudnn-cu13", "triton"} <= set(pins)
    shared = set(pins) & set(cpu_pins) - {"torch"}
    assert shared == set(cpu_pins) - {"torch"}
    assert {name: pins[name].version for name in shared} == {name: cpu_pins[name].version for name in shared}
    assert all(pin.hashes and all(len(h) == 64 for h in pin.hashes) for pin in cuda.pins)
    runtimes._check_variant(list(cuda.pins), "cuda", arm)
    if cuda.fields["python"] == PYTHON and cuda.fields["platform"] == runtimes.platform_tag():
        assert check_lock(arm, PYTHON, "cuda").pins == cuda.pins


def test_a_build_plan_reports_every_difference_from_the_lock() -> None:
    lock = runtimes.Lock(
        Path("requirements-control-cuda.lock"),
        {},
        (Pin("torch", "2.13.0", ("a" * 64,)), Pin("numpy", "2.4.0", ("b" * 64,)), Pin("gone", "1.0", ("c" * 64,))),
        (),
    )
    resolved = [
        Pin("torch", "2.13.0", ("f" * 64,)),  # another artifact than the one locked
        Pin("numpy", "2.4.1", ("b" * 64,)),  # another version
        Pin("extra", "0.1", ("d" * 64,)),  # a package the lock does not hold
    ]
    problems = runtimes._lock_mismatches(lock, resolved)
    assert problems == [
        "extra==0.1 would be installed, not pinned",
        "gone==1.0 is pinned, would not be installed",
        "numpy: the lock pins 2.4.0, pip picks 2.4.1",
        f"torch==2.13.0: pip's artifact has sha256 {'f' * 16}…, not one in the lock",
    ]
    assert runtimes._lock_mismatches(lock, [Pin(p.name, p.version, p.hashes) for p in lock.pins]) == []


@pytest.mark.slow
def test_the_committed_cuda_lock_installs_here_as_planned(monkeypatch: pytest.MonkeyPatch) -> None:
    """The CUDA runtime's build plan, checked on a CPU host: pip resolves the committed lock in
    hash-checking mode with dependencies, from PyPI (metadata only, no multi-GB download), and
    picks exactly the locked versions and artifacts."""
    monkeypatch.setenv(runtimes.VARIANT_ENV, "cuda")
    plan = runtimes.plan_build("control")
    assert plan.problems == ()
    assert (plan.variant, plan.torch, plan.sdists) == ("cuda", "2.13.0", ("deepspeed",))
    assert plan.wheels == plan.packages - 1
    assert "nvidia-nccl-cu13" in plan.accelerator_packages
    assert plan.hooks[-1] == "deepspeed_ops.py"


@pytest.mark.slow
def test_a_build_plan_refuses_a_lock_that_lost_a_dependency(containers: Path) -> None:
    """The attack on the plan: a lock missing a transitive dependency would install (``--no-deps``)
    and break at import; the plan's with-dependencies resolution refuses it."""
    lock = lock_path(get_arm("control"), "cpu")
    text = lock.read_text()
    pin = next(p for p in read_lock(lock).pins if p.name.lower() == "filelock")
    start = text.index(f"{pin.name}=={pin.version}")
    end = text.index("\n", text.index(pin.hashes[-1], start))
    lock.write_text(text[:start] + text[end + 1 :])
    plan = runtimes.plan_build("control")
    assert plan.problems and "pip cannot install the lock" in plan.problems[0]
    assert "filelock" in plan.problems[0].lower()


def test_lock_round_trips_through_write_and_read(containers: Path) -> None:
    arm = get_arm("control")
    pins = [Pin("torch", "2.13.0+cpu", ("a" * 64,)), Pin("Jinja2", "3.1.6", ("b" * 64, "c" * 64))]
    tools = [Pin("wheel", "0.48.0", ("d" * 64,))]
    path = lock_path(arm, "cpu")
    write_lock(path, arm, PYTHON, "cpu", pins, tools)
    lock = check_lock(arm, PYTHON, "cpu")
    assert sorted(lock.pins, key=lambda p: p.name.lower()) == sorted(pins, key=lambda p: p.name.lower())
    assert lock.build_tools == tuple(tools)
    assert lock.fields["python"] == PYTHON


def test_runtime_digest_covers_the_lock_the_variant_and_the_python_version(containers: Path) -> None:
    arm = get_arm("control")
    before = runtime_digest(arm, "3.11", "cpu")
    assert before == runtime_digest(arm, "3.11", "cpu")
    assert before != runtime_digest(arm, "3.12", "cpu")
    assert before != runtime_digest(arm, "3.11", "cuda")  # a future variant is another runtime
    _change_a_hash(lock_path(arm, "cpu"))
    assert runtime_digest(arm, "3.11", "cpu") != before
    # The other arm's runtime does not move with this arm's lock.
    assert runtime_digest(get_arm("traincheck"), "3.11", "cpu") == runtime_digest(get_arm("traincheck"), "3.11", "cpu")


def test_unknown_variant_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(runtimes.VARIANT_ENV, "rocm")
    with pytest.raises(TrainFailError, match="not a runtime variant"):
        runtimes.runtime_variant()


def test_a_stale_or_missing_lock_is_refused_with_the_command_that_refreshes_it(containers: Path) -> None:
    arm = get_arm("control")
    lock = lock_path(arm, "cpu")
    if read_lock(lock).fields["platform"] != runtimes.platform_tag():
        pytest.skip("the committed lock is for another platform")
    check_lock(arm, read_lock(lock).fields["python"], "cpu")
    base = containers / "runtime" / "requirements-base.txt"
    base.write_text(base.read_text().replace("numpy==2.4.6", "numpy==2.4.5"))
    with pytest.raises(TrainFailError, match=r"stale.*trainfail runtimes lock --arm control"):
        check_lock(arm, read_lock(lock).fields["python"], "cpu")
    lock.unlink()
    with pytest.raises(TrainFailError, match=r"no lock.*trainfail runtimes lock --arm control"):
        check_lock(arm, PYTHON, "cpu")


def test_resolution_pins_what_pip_reports_with_hashes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    local = tmp_path / "torch-2.13.0+cpu-cp311-cp311-manylinux_2_28_x86_64.whl"
    local.write_bytes(b"a local wheel without a hash in its link")
    report = {
        "install": [
            {
                "metadata": {"name": "torch", "version": "2.13.0+cpu"},
                "download_info": {"url": local.as_uri(), "archive_info": {}},
            },
            {
                "metadata": {"name": "deepspeed", "version": "0.19.8"},
                "download_info": {
                    "url": "https://files.example/deepspeed-0.19.8.tar.gz",
                    "archive_info": {"hashes": {"sha256": "e" * 64}},
                },
            },
        ]
    }

    def fake_run(argv: list[str], log: Path, extra_env: dict[str, str] | None = None) -> None:
        Path(argv[argv.index("--report") + 1]).write_text(json.dumps(report))

    monkeypatch.setattr(runtimes, "_run", fake_run)
    pins, sdists = runtimes._resolve(Path("python"), ["-r", "x.txt"], tmp_path, tmp_path / "log")
    assert pins == [
        Pin("torch", "2.13.0+cpu", (hashlib.sha256(local.read_bytes()).hexdigest(),)),
        Pin("deepspeed", "0.19.8", ("e" * 64,)),
    ]
    assert sdists == ["deepspeed"]
    runtimes._check_variant(pins, "cpu", get_arm("control"))
    with pytest.raises(TrainFailError, match="CUDA build"):
        runtimes._check_variant([Pin("torch", "2.13.0", ("f" * 64,))], "cpu", get_arm("control"))


def _runtime(digest: str, root: Path) -> Runtime:
    return Runtime(arm="control", root=root, digest=digest, base_prefix=Path("/usr"), python_version=PYTHON)


def test_a_lock_change_voids_grading_receipts(
    containers: Path, echo_case: CaseSpec, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TRAINFAIL_HOME", str(tmp_path / "home"))
    arm = get_arm("control")
    before = _runtime(runtime_digest(arm, PYTHON, "cpu"), tmp_path / "rt-before")
    _change_a_hash(lock_path(arm, "cpu"))
    after = _runtime(runtime_digest(arm, PYTHON, "cpu"), tmp_path / "rt-after")
    assert before.digest != after.digest

    old, new = Grader(echo_case, runtime=before), Grader(echo_case, runtime=after)
    assert old.grader_hash != new.grader_hash
    tree = "f" * 64
    outcome = ScenarioOutcome(scenario=echo_case.scenarios[0].name, kind="healthy", status="pass", reason="ok")
    receipt = Receipt(
        case_id=echo_case.id, tree=tree, grader_hash=old.grader_hash, outcomes=(outcome,), created=0.0, duration_s=1.0
    )
    write_json(old.receipt_path(tree), receipt.to_json())
    assert old.cached(tree, partial_ok=True) == receipt
    assert new.cached(tree, partial_ok=True) is None  # the new runtime grades afresh
    # Even a receipt filed where the new grader looks is refused: its grader hash is the old one.
    write_json(new.receipt_path(tree), receipt.to_json())
    assert new.cached(tree, partial_ok=True) is None


def test_image_tags_follow_the_runtime_digest(
    containers: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("docker")
    from gym_trainfail.sandbox import docker_image

    monkeypatch.setattr(docker_image, "containers_dir", lambda: containers)

    arm = get_arm("control")
    before = _runtime(runtime_digest(arm, PYTHON, "cpu"), tmp_path / "rt")
    packages = docker_image.artifact_lines(read_lock(lock_path(arm, "cpu")).pins)
    tag = docker_image.image_tag(arm, docker_image.image_inputs(arm, before, packages, "sha256:base"))
    _change_a_hash(lock_path(arm, "cpu"))
    after = _runtime(runtime_digest(arm, PYTHON, "cpu"), tmp_path / "rt")
    changed = docker_image.artifact_lines(read_lock(lock_path(arm, "cpu")).pins)
    assert docker_image.image_tag(arm, docker_image.image_inputs(arm, after, packages, "sha256:base")) != tag
    assert docker_image.image_tag(arm, docker_image.image_inputs(arm, before, changed, "sha256:base")) != tag
    # The lock travels into the image's build context, where the same builder checks it.
    assert lock_path(arm, "cpu") in docker_image.runtime_files(arm)


def test_the_installer_is_not_part_of_a_runtimes_identity(containers: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """uv and pip install the same lock to the same packages (tests/test_installer.py): the
    runtime's digest, hence its folder, receipts and image tag, must not say which one ran."""
    arm = get_arm("control")
    digests = set()
    for choice in ("pip", "uv", "auto", "/opt/somewhere/uv"):
        monkeypatch.setenv("TRAINFAIL_INSTALLER", choice)
        digests.add(runtime_digest(arm, PYTHON, "cpu"))
    assert len(digests) == 1


def test_the_image_build_carries_the_installer_and_the_hosts_uv(tmp_path: Path) -> None:
    """The image's builder is runtimes.py and what it imports (the installer with it), and the
    context carries the host's uv for it; without one, the same context builds with pip."""
    pytest.importorskip("docker")
    import tarfile

    from gym_trainfail.sandbox import docker_image

    assert "installer.py" in {module.name for module in docker_image.builder_modules()}
    arm = get_arm("control")
    fake_uv = tmp_path / "uv-binary"
    fake_uv.write_bytes(b"\x7fELF not really")
    fake_uv.chmod(0o755)
    with_uv, without = tmp_path / "with.tar", tmp_path / "without.tar"
    docker_image.write_context(with_uv, arm, [], fake_uv)
    docker_image.write_context(without, arm, [])
    with tarfile.open(with_uv) as tar:
        member = tar.getmember(docker_image.CONTEXT_UV)
        assert member.mode & 0o111 and tar.extractfile(member).read() == fake_uv.read_bytes()  # type: ignore[union-attr]
        assert "builder/gym_trainfail/installer.py" in tar.getnames()
    with tarfile.open(without) as tar:
        assert docker_image.CONTEXT_UV not in tar.getnames()
    assert 'TRAINFAIL_INSTALLER="$installer"' in docker_image.dockerfile().read_text()
