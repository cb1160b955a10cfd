"""Shared fixtures: the control runtime (built once), the fast echo fixture case, temp runs."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from gym_trainfail.cases import CaseSpec, load_case
from gym_trainfail.env import TrainFailEnv
from gym_trainfail.runtimes import Runtime, build_runtime
from gym_trainfail.sandbox import backend_status

FIXTURES = Path(__file__).parent / "fixtures"
ECHO_CASE = FIXTURES / "cases" / "echo_case"
#: Scenarios of the echo case with two device counts and a scenario its group run skips.
ECHO_GROUP_SCENARIOS = FIXTURES / "cases" / "echo_group_scenarios.toml"


def make_echo_group_case(folder: Path) -> Path:
    """The echo case with :data:`ECHO_GROUP_SCENARIOS` (tests of scenario groups), in ``folder``."""
    shutil.copytree(ECHO_CASE, folder)
    shutil.copyfile(ECHO_GROUP_SCENARIOS, folder / "grader" / "scenarios.toml")
    toml = folder / "case.toml"
    toml.write_text(toml.read_text().replace("TrainFailTest/Echo-v0", "TrainFailTest/EchoGroup-v0"))
    return folder


def pytest_configure(config: pytest.Config) -> None:
    # Sandboxed commands must never see host secrets; tests plant one to prove it.
    os.environ.setdefault("OPENAI_API_KEY", "sk-test-host-secret-do-not-leak")


@pytest.fixture(autouse=True)
def _trainfail_environment() -> Iterator[None]:
    """Every test leaves the ``TRAINFAIL_*`` environment as it found it: code under test may set
    such variables for its process (``--accelerator`` sets the runtime variant), and one leaked
    into later tests changes which runtime, devices or state directory they use."""
    before = {k: v for k, v in os.environ.items() if k.startswith("TRAINFAIL_")}
    yield
    for key in [k for k in os.environ if k.startswith("TRAINFAIL_") and k not in before]:
        del os.environ[key]
    os.environ.update(before)


@pytest.fixture(scope="session")
def runtime() -> Runtime:
    """The control runtime (built on first use; a few minutes on a fresh machine)."""
    return build_runtime("control")


@pytest.fixture(scope="session")
def traincheck_runtime() -> Runtime:
    """The treatment runtime (TrainCheck 0.2.0 adds about 560 MB; minutes on first use)."""
    return build_runtime("traincheck")


@pytest.fixture(scope="session")
def echo_case() -> CaseSpec:
    return load_case(ECHO_CASE)


@pytest.fixture(scope="session")
def bwrap_usable() -> None:
    reason = backend_status()["bwrap"]
    if reason is not None:
        pytest.fail(f"bubblewrap must be usable for this suite (CI installs it): {reason}")


@pytest.fixture
def echo_env(echo_case: CaseSpec, runtime: Runtime, bwrap_usable: None, tmp_path: Path) -> Iterator[TrainFailEnv]:
    env = TrainFailEnv(case=echo_case, sandbox="bwrap", runs_root=tmp_path / "runs")
    yield env
    env.close()


@pytest.fixture
def case_copy(tmp_path: Path) -> Path:
    """A writable copy of the echo case folder, for tests that break it."""
    target = tmp_path / "echo_case"
    shutil.copytree(ECHO_CASE, target)
    return target
