"""The CLI's errors: one line on stderr that says what to do next, exit status 1, no traceback
(``--debug`` shows it); text from elsewhere reaches the user unmangled by rich markup; arguments
are checked before any expensive work."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from gym_trainfail import cli
from gym_trainfail.errors import TrainFailError
from gym_trainfail.grading import Receipt, ScenarioOutcome
from gym_trainfail.registry import get_case

CASE = "TrainFail/DDPTokenAverage-v1"
REPO = Path(__file__).resolve().parents[1]


@pytest.fixture
def empty_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A state directory with nothing in it: a runtime build would create ``runtimes/`` here."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("TRAINFAIL_HOME", str(home))
    return home


def one_error_line(stderr: str) -> str:
    lines = stderr.strip().splitlines()
    assert len(lines) == 1, stderr
    assert lines[0].startswith("error: ") and "Traceback" not in stderr
    return lines[0]


def raising(exc: BaseException) -> object:
    def handler(*_: object, **__: object) -> object:
        raise exc

    return handler


def test_unknown_sandbox_is_refused_before_a_runtime_build(
    empty_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    status = cli.main(["run", "--case", CASE, "--agent", "noop", "--sandbox", "dokcer"])
    line = one_error_line(capsys.readouterr().err)
    assert status == 1
    assert line == (
        "error: unknown sandbox 'dokcer'; did you mean 'docker'? --sandbox takes one of auto, bwrap, docker, process"
    )
    assert not (empty_home / "runtimes").exists(), "no runtime build may start before the arguments are checked"


def test_qualify_refuses_no_parallelism_before_a_runtime_build(
    empty_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    status = cli.main(["qualify", CASE, "--parallel", "0", "--sandbox", "bwrap"])
    line = one_error_line(capsys.readouterr().err)
    assert status == 1
    assert line == "error: --parallel must be at least 1 (1 grades one variant at a time), got 0"
    assert not (empty_home / "runtimes").exists()


@pytest.mark.parametrize(
    "argv",
    [
        ["grade", "--case", CASE, "--tree", ".", "--sandbox", "chroot"],
        ["qualify", CASE, "--sandbox", "chroot"],
        ["demo", "--sandbox", "chroot"],
        ["batch", "--out", "x", "--cases", "all", "--arms", "control", "--agents", "noop", "--trials", "1",
         "--sandbox", "chroot"],
    ],
    ids=["grade", "qualify", "demo", "batch"],
)  # fmt: skip
def test_every_command_checks_the_sandbox_first(
    argv: list[str], empty_home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    status = cli.main(argv)
    line = one_error_line(capsys.readouterr().err)
    assert status in (1, 2) and "unknown sandbox 'chroot'" in line
    assert not (empty_home / "runtimes").exists()


def test_unknown_agent_is_refused_before_a_runtime_build(empty_home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["run", "--case", CASE, "--agent", "refrence", "--sandbox", "process"]) == 1
    line = one_error_line(capsys.readouterr().err)
    assert "no agent named 'refrence'. Did you mean 'reference'?" in line
    assert not (empty_home / "runtimes").exists()


def test_bracketed_text_in_an_error_survives(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    message = "[rank0]: the Docker SDK is missing; pip install 'gym-trainfail[docker]' [/] [bold]x"
    monkeypatch.setattr(cli.qualifying, "resolve_case", raising(TrainFailError(message)))
    assert cli.main(["qualify", CASE]) == 1
    assert one_error_line(capsys.readouterr().err) == f"error: {message}"


def test_the_ray_hint_survives(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    from gym_trainfail.batch.ray_runner import load_ray

    monkeypatch.setitem(sys.modules, "ray", None)  # an import of ray now fails, as without the extra
    monkeypatch.setattr(cli.qualifying, "resolve_case", lambda _: load_ray())
    assert cli.main(["qualify", CASE]) == 1
    assert (
        one_error_line(capsys.readouterr().err) == "error: the Ray runner needs Ray: pip install 'gym-trainfail[ray]'"
    )


def test_a_long_message_stays_on_one_line(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    message = "a message with\nseveral lines " + "and many words " * 20
    monkeypatch.setattr(cli.qualifying, "resolve_case", raising(TrainFailError(message)))
    assert cli.main(["qualify", CASE]) == 1
    assert one_error_line(capsys.readouterr().err) == "error: " + " ".join(message.split())


def test_an_unexpected_exception_is_one_line_and_debug_shows_the_traceback(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(cli.qualifying, "resolve_case", raising(RuntimeError("[rank0]: boom")))
    assert cli.main(["qualify", CASE]) == 1
    line = one_error_line(capsys.readouterr().err)
    assert line.startswith("error: RuntimeError: [rank0]: boom") and line.endswith(
        "run again with --debug to see the traceback"
    )
    for argv in (["--debug", "qualify", CASE], ["qualify", CASE, "--debug"]):
        assert cli.main(argv) == 1
        stderr = capsys.readouterr().err
        assert stderr.startswith("Traceback (most recent call last)") and "RuntimeError: [rank0]: boom" in stderr
        assert stderr.strip().splitlines()[-1].startswith("error: RuntimeError: [rank0]: boom")


def test_debug_shows_the_traceback_of_an_operator_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["run", "--case", "TrainFail/NoSuchCase-v0", "--agent", "noop"]) == 1
    assert "NoSuchCase" in one_error_line(capsys.readouterr().err)
    assert cli.main(["--debug", "run", "--case", "TrainFail/NoSuchCase-v0", "--agent", "noop"]) == 1
    stderr = capsys.readouterr().err
    assert "Traceback (most recent call last)" in stderr and "UnknownCaseError" in stderr


def test_grade_could_not_grade_exits_2_with_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["grade", "--case", CASE, "--patch", str(tmp_path / "missing[1].diff")]) == 2
    assert one_error_line(capsys.readouterr().err).endswith("missing[1].diff: no such file")


def test_doctor_table_keeps_bracketed_text(
    empty_home: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    hint = "no SDK; pip install 'gym-trainfail[docker]'"
    monkeypatch.setattr(cli.host, "backend_status", lambda: {"docker": hint, "bwrap": None})
    assert cli.main(["doctor"]) == 0
    assert "docker: " + hint in capsys.readouterr().out


def test_grader_reasons_keep_rank_prefixes(capsys: pytest.CaptureFixture[str]) -> None:
    outcome = ScenarioOutcome(scenario="ws2", kind="failure", status="fail", reason="[rank0]: loss [diverged]")
    receipt = Receipt(CASE, "a" * 64, "b" * 64, (outcome,), created=time.time(), duration_s=1.0)
    cli.episodes.print_receipt(get_case(CASE), receipt)
    assert "[rank0]: loss [diverged]" in capsys.readouterr().out


def test_progress_lines_are_not_markup(capsys: pytest.CaptureFixture[str]) -> None:
    with cli.common.spinner("[bold]building[/]") as progress:
        progress.both("pip install 'gym-trainfail[docker]'")
        progress.done("[rank1]: done")
    stderr = capsys.readouterr().err
    assert "  pip install 'gym-trainfail[docker]'\n" in stderr and "  [rank1]: done\n" in stderr


def test_a_missing_extra_names_it(tmp_path: Path) -> None:
    """``--agent openai`` without the ``agents`` extra: one line that says which extra to install,
    before any runtime build (``openai`` is installed here; the child hides it)."""
    home = tmp_path / "home"
    home.mkdir()
    code = (
        "import sys; sys.modules['openai'] = None; from gym_trainfail.cli import main; "
        f"sys.exit(main(['run', '--case', {CASE!r}, '--agent', 'openai', '--model', 'm', '--sandbox', 'process']))"
    )
    env = {**os.environ, "TRAINFAIL_HOME": str(home)}
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=REPO, timeout=120
    )
    assert result.returncode == 1, result.stderr
    line = one_error_line(result.stderr)
    assert line == "error: the 'openai' agent needs openai, which is not installed; pip install 'gym-trainfail[agents]'"
    assert not (home / "runtimes").exists()


def test_qualify_all_says_which_gate_refused(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`make qualify`'s summary tells a case whose rubric is refused (verdicts admitted, record
    written) from one whose verdicts are refused; either makes the exit status 1."""
    from gym_trainfail.registry import default_registry

    ids = default_registry().ids()
    states = {ids[0]: (1, "admitted, rubric refused"), ids[1]: (1, "REFUSED")}

    def fake(args: object, case: object, found: list[str] | None = None) -> int:
        code, state = states.get(case.id, (0, "admitted"))  # type: ignore[attr-defined]
        assert found is not None
        found.append(state)
        return code

    monkeypatch.setattr(cli.qualifying, "qualify_one", fake)
    assert cli.main(["qualify", "--all", "--wrong-repairs", "--sandbox", "bwrap"]) == 1
    lines = {line.split()[0]: line for line in capsys.readouterr().out.splitlines() if line.startswith("TrainFail/")}
    assert "admitted, rubric refused" in lines[ids[0]] and "REFUSED" not in lines[ids[0]]
    assert "REFUSED" in lines[ids[1]]
    assert all(" admitted " in lines[i] for i in ids[2:])
    states.clear()
    capsys.readouterr()
    assert cli.main(["qualify", "--all", "--wrong-repairs", "--sandbox", "bwrap"]) == 0
