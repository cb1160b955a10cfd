"""The built package carries everything: cases, runtime recipes and locks, harness support code.

Builds the sdist and, from it, the wheel (``python -m build``), installs the wheel (not
editable) into a fresh virtual environment, and from a folder outside the checkout lists the
cases and plays one graded reference episode in bubblewrap. The episode reuses the runtime
built for this checkout (same ``TRAINFAIL_HOME``): the installed package must hash to the same
runtime. Marked ``slow`` (a minute or two, plus the episode); needs the package index for the
package's own dependencies.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tarfile
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from gym_trainfail.paths import SOURCE_ROOT
from gym_trainfail.registry import Registry, case_folders
from gym_trainfail.runtimes import Runtime, base_interpreter

pytestmark = pytest.mark.slow

EPISODE_CASE = "TrainFail/TPClipGradNorm-v1"


def _run(argv: list[str], cwd: Path, timeout: float = 900) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}
    result = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False)
    if result.returncode != 0:
        pytest.fail(
            f"{' '.join(argv[:4])} … exited {result.returncode}:\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
        )
    return result


@pytest.fixture(scope="module")
def expected(tmp_path_factory: pytest.TempPathFactory) -> Registry:
    """The checkout's in-tree cases as they are when the package is built (taken first: a case
    added to envs/ while the tests run is not in the wheel)."""
    return _in_tree_cases()


@pytest.fixture(scope="module")
def dist(expected: Registry, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The sdist and the wheel built from it (what ``python -m build`` makes)."""
    out = tmp_path_factory.mktemp("dist")
    # cwd outside the checkout: its build/ folder must not shadow the `build` package.
    _run([sys.executable, "-m", "build", "--outdir", str(out), str(SOURCE_ROOT)], cwd=out)
    return out


@pytest.fixture(scope="module")
def installed(dist: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A fresh venv (the runtimes' base interpreter) with the wheel installed, not editable."""
    venv = tmp_path_factory.mktemp("venv") / "v"
    outside = venv.parent
    _run([str(base_interpreter()), "-m", "venv", str(venv)], cwd=outside)
    (wheel,) = dist.glob("*.whl")
    _run([str(venv / "bin" / "pip"), "install", "--no-input", "-q", str(wheel)], cwd=outside)
    yield venv


def _in_tree_cases() -> Registry:
    """The checkout's in-tree cases (no plugins), as the installed package should see them."""
    registry = Registry()
    for folder in case_folders(SOURCE_ROOT / "envs"):
        registry.register_quietly(folder)
    return registry


def test_sdist_and_wheel_carry_cases_containers_locks_and_harnesslib(dist: Path) -> None:
    (sdist,) = dist.glob("*.tar.gz")
    (wheel,) = dist.glob("*.whl")
    with tarfile.open(sdist) as tar:
        in_sdist = {name.split("/", 1)[1] for name in tar.getnames() if "/" in name}
    in_wheel = set(zipfile.ZipFile(wheel).namelist())
    for folder in case_folders(SOURCE_ROOT / "envs"):
        relative = folder.relative_to(SOURCE_ROOT)
        assert f"{relative}/case.toml" in in_sdist
        assert f"gym_trainfail/_builtin/{relative}/case.toml" in in_wheel
        assert any(n.startswith(f"gym_trainfail/_builtin/{relative}/grader/") for n in in_wheel)
        assert any(n.startswith(f"gym_trainfail/_builtin/{relative}/workspace/") for n in in_wheel)
    for name in (
        "containers/Dockerfile",
        "containers/sandbox_init.py",
        "containers/runtime/requirements-control.txt",
        "containers/runtime/requirements-control-cpu.lock",
        "containers/runtime/requirements-traincheck-cpu.lock",
        "containers/runtime/blocker/_trainfail_blocker.pth",
        "containers/runtime/postbuild/deepspeed_ops.py",
    ):
        assert name in in_sdist
        assert f"gym_trainfail/_builtin/{name}" in in_wheel
    # the rubric judge's learned stance model (gym_trainfail/diagnosis/stance_model.py) loads from the package
    assert "gym_trainfail/diagnosis/stance_model.npz" in in_sdist
    assert "gym_trainfail/diagnosis/stance_model.npz" in in_wheel
    assert "gym_trainfail/harnesslib/warm_launch.py" in in_wheel
    assert "trainfail_agents/scripted.py" in in_wheel
    leftovers = [n for n in in_wheel if "__pycache__" in n or ".ruff_cache" in n or n.endswith(".pyc")]
    assert leftovers == []


def test_installed_wheel_lists_every_in_tree_case_from_outside_the_checkout(
    installed: Path, expected: Registry
) -> None:
    outside = installed.parent
    result = _run([str(installed / "bin" / "trainfail"), "cases", "--json"], cwd=outside)
    listing = json.loads(result.stdout)
    assert len(expected) >= 3
    assert sorted(case["id"] for case in listing["cases"]) == expected.ids()
    # A case the checkout refuses (one being written) is refused the same way, not lost.
    assert {Path(k).name for k in listing["refused"]} == {Path(k).name for k in expected.refused}
    site = installed / "lib"
    assert all(Path(case["folder"]).is_relative_to(site) for case in listing["cases"])  # not the checkout


def test_installed_wheel_plays_a_graded_reference_episode_in_bwrap(
    installed: Path, runtime: Runtime, bwrap_usable: None
) -> None:
    outside = installed.parent
    probe = _run(
        [
            str(installed / "bin" / "python"),
            "-c",
            "from gym_trainfail.runtimes import find_runtime; print(find_runtime('control').root)",
        ],
        cwd=outside,
    )
    assert probe.stdout.strip() == str(runtime.root)  # the installed package hashes to the same runtime
    out = outside / "episode"
    result = _run(
        [
            str(installed / "bin" / "trainfail"),
            "run",
            "--case",
            EPISODE_CASE,
            "--agent",
            "reference",
            "--sandbox",
            "bwrap",
            "--out",
            str(out),
            "--json",
        ],
        cwd=outside,
        timeout=1500,
    )
    episode = json.loads(result.stdout)
    assert episode["case"] == EPISODE_CASE
    assert episode["reward"] == 1.0, episode
