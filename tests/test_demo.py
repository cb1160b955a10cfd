"""``make demo``: it installs only the core, and the demo says where the time went (phases read
from the setup steps' log, timed in the demo itself). The episodes themselves are covered by the
episode and packaging tests; nothing here plays one."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from gym_trainfail import demo
from gym_trainfail.demo import Phase, PhaseClock, format_seconds, setup_phases
from gym_trainfail.installer import PHASE_LOG_ENV
from gym_trainfail.paths import SOURCE_ROOT
from gym_trainfail.runtimes import Runtime


def _log(path: Path, *lines: str) -> dict[str, str]:
    path.write_text("".join(line + "\n" for line in lines))
    return {PHASE_LOG_ENV: str(path), demo.DEMO_STARTED_ENV: "1000.0"}


def test_setup_phases_of_this_run_are_read_from_the_log(tmp_path: Path) -> None:
    env = _log(
        tmp_path / "phases.tsv",
        "package\t900.0\t950.0\tan earlier make run: not this demo's",
        "package\t1001.0\t1009.5\tuv 0.13.9",
        "system packages\t1010.0\t1010.25\tnothing to install",
        "package[leaderboard]\t1011.0\t1012.0\tuv 0.13.9",
    )
    phases = setup_phases(env)
    assert [p.name for p in phases] == ["system packages", "package"]
    assert phases[0] == Phase("system packages", 0.25, "nothing to install")
    assert phases[1] == Phase("package", 9.5, "uv 0.13.9; uv 0.13.9")


def test_a_phase_not_in_this_run_says_so(tmp_path: Path) -> None:
    env = _log(tmp_path / "phases.tsv", "system packages\t1001.0\t1002.0\tapt-get install bubblewrap")
    assert setup_phases(env)[1] == Phase("package", None, "done before this run")
    # plain `trainfail demo` (no make): nothing from the log counts, however recent
    assert all(p.seconds is None for p in setup_phases({PHASE_LOG_ENV: env[PHASE_LOG_ENV]}))
    assert all(p.seconds is None for p in setup_phases({**env, PHASE_LOG_ENV: str(tmp_path / "missing")}))


def test_a_hostile_phase_log_cannot_invent_phases_or_times(tmp_path: Path) -> None:
    env = _log(
        tmp_path / "phases.tsv",
        "runtime\t1001.0\t1002.0\tnot a setup phase",
        "package\tnan\t1002.0\tnot a number",
        "package\t1001.0\tinf\tnot finite",
        "package\t1001.0\t1002.0",
        "package\t1001.0\t1002.0\t" + "x" * 5000,
        "system packages\t1005.0\t1001.0\tends before it starts",
    )
    phases = setup_phases(env)
    assert phases == [Phase("system packages", 0.0, "ends before it starts"), Phase("package", None, phases[1].note)]


def test_the_table_ends_with_the_total_since_make_started() -> None:
    clock = PhaseClock(setup=[Phase("system packages", 0.5), Phase("package", 9.0)], started=1000.0)
    with clock.phase("runtime") as phase:
        phase.note = "built"
    rows = clock.table(now=1125.0)
    assert [r.name for r in rows] == ["system packages", "package", "runtime", "total"]
    assert rows[2].note == "built" and rows[2].seconds is not None and rows[2].seconds >= 0
    assert rows[-1] == Phase("total", 125.0, "since `make demo` started")
    alone = PhaseClock(setup=[Phase("package", None)], started=None, phases=[Phase("episodes", 40.0)])
    assert alone.table()[-1] == Phase("total", 40.0, "of the phases above")


def test_phase_times_read_as_a_person_would_say_them() -> None:
    assert [format_seconds(s) for s in (None, 0.04, 42.06, 60.0, 67.4, 3599.6)] == [
        "—", "0.0 s", "42.1 s", "1 min 00 s", "1 min 07 s", "60 min 00 s"
    ]  # fmt: skip


def test_the_runtime_note_says_which_installer_built_it(tmp_path: Path) -> None:
    runtime = Runtime(arm="control", root=tmp_path, digest="d" * 64, base_prefix=Path("/usr"), python_version="3.11")
    (tmp_path / "runtime.json").write_text(json.dumps({"installer": "uv 0.13.9"}))
    assert demo._installer(runtime) == "uv 0.13.9"
    (tmp_path / "runtime.json").write_text(
        json.dumps({"installer": "pip", "installer_fallback": "uv is not installed"})
    )
    assert demo._installer(runtime) == "pip, because uv is not installed"
    (tmp_path / "runtime.json").write_text(json.dumps({"packages": []}))  # built before installers were recorded
    assert demo._installer(runtime) == "pip"


def test_bootstrap_records_the_system_packages_phase(tmp_path: Path) -> None:
    """The real script, on a machine that has what it installs (``make setup`` ran it)."""
    log = tmp_path / "phases.tsv"
    before = time.time()
    env = {**os.environ, PHASE_LOG_ENV: str(log)}
    subprocess.run([str(SOURCE_ROOT / "scripts" / "bootstrap-system.sh")], env=env, check=True, timeout=600)
    name, start, end, note = log.read_text().splitlines()[0].split("\t")
    assert name == "system packages" and before - 1 <= float(start) <= float(end) <= time.time() + 1
    assert note  # what it did: "nothing to install" here, the apt-get line on a bare machine


def _make_dry_run(target: str, tmp_path: Path) -> str:
    venv = tmp_path / "venv"
    result = subprocess.run(
        ["make", "-n", "-C", str(SOURCE_ROOT), target, f"VENV={venv}"], capture_output=True, text=True, check=True
    )
    return result.stdout


@pytest.mark.parametrize(
    ("target", "extras"),
    [
        ("demo", None),
        ("test", "dev,agents,docker,ray,leaderboard,serve,inspect"),
        ("leaderboard", "leaderboard"),
        ("images", "docker"),
    ],
)
def test_each_make_target_installs_only_the_extras_it_needs(target: str, extras: str | None, tmp_path: Path) -> None:
    """``make -n``: what each target would run on a machine without a venv."""
    commands = _make_dry_run(target, tmp_path).splitlines()
    installs = [c for c in commands if "gym_trainfail/installer.py venv" in c]
    assert installs[0].endswith(f"installer.py venv {tmp_path / 'venv'}")  # the core first, no extras
    wanted = [] if extras is None else [f"--extras {extras}"]
    assert [c.split(" venv ", 1)[1].split(" ", 1)[1] for c in installs[1:]] == wanted
    if target == "demo":
        assert any(c.endswith("trainfail demo --sandbox bwrap") for c in commands)
        assert not any("runtimes build" in c for c in commands)  # the demo builds and times it


@pytest.mark.parametrize(
    ("hidden", "code", "message"),
    [
        (
            ["openenv", "uvicorn"],
            "from gym_trainfail.cli import main; sys.exit(main(['serve']))",
            "error: trainfail serve needs uvicorn, which is not installed; pip install 'gym-trainfail[serve]'",
        ),
        (
            ["docker"],
            "from gym_trainfail.cli import main; sys.exit(main(['images', 'list']))",
            "error: the Docker SDK is not installed (docker); pip install 'gym-trainfail[docker]'",
        ),
        (
            ["inspect_ai"],
            "import gym_trainfail.inspect",
            "gym_trainfail.errors.MissingExtraError: gym_trainfail's Inspect AI tasks needs inspect_ai, which is "
            "not installed; pip install 'gym-trainfail[inspect]'",
        ),
    ],
    ids=["serve", "images", "inspect"],
)
def test_a_command_without_its_extra_names_the_extra(hidden: list[str], code: str, message: str) -> None:
    """What ``make demo`` leaves out, each command that needs it asks for by name (the agents,
    Ray and leaderboard extras have theirs in test_cli_errors and test_leaderboard)."""
    hide = "; ".join(f"sys.modules[{name!r}] = None" for name in hidden)
    result = subprocess.run(
        [sys.executable, "-c", f"import sys; {hide}; {code}"], capture_output=True, text=True, cwd=SOURCE_ROOT
    )
    assert result.returncode == 1
    assert result.stderr.strip().splitlines()[-1] == message
