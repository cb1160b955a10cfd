"""What every ``trainfail`` command uses: the consoles, progress on stderr, one-line errors, the
sandbox and judge options, the runtimes a command needs."""

from __future__ import annotations

import argparse
import contextlib
import difflib
import os
import sys
import traceback
from collections.abc import Callable, Iterator
from pathlib import Path

from rich.console import Console
from rich.text import Text

from gym_trainfail.diagnosis.judges import Judge
from gym_trainfail.diagnosis.llm_judge import JUDGE_BASE_URL_ENV, JUDGE_MODEL_ENV, LLMJudge
from gym_trainfail.errors import RuntimeMissingError, TrainFailError
from gym_trainfail.grading import ScenarioOutcome
from gym_trainfail.runtimes import Runtime, build_runtime, find_runtime
from gym_trainfail.sandbox import BACKENDS, resolve_backend

# Rich assumes 80 columns when output is not a terminal; tables here are wider than that.
out = Console(width=None if sys.stdout.isatty() else 200)
err = Console(stderr=True)


def fail(message: str, exc: BaseException, debug: bool, status: int = 1) -> int:
    """Print ``message`` as one ``error:`` line on stderr (after the traceback, with ``--debug``)."""
    if debug:
        traceback.print_exception(exc, file=sys.stderr)
    line = " ".join(message.split()) or type(exc).__name__
    err.print(Text.assemble(("error:", "bold red"), " ", line), soft_wrap=True, highlight=False)
    return status


def unexpected(exc: BaseException) -> str:
    hint = "" if isinstance(exc, OSError) else " (a bug in trainfail: please report it with the traceback)"
    return f"{type(exc).__name__}: {exc}{hint}; run again with --debug to see the traceback"


@contextlib.contextmanager
def spinner(title: str) -> Iterator[Progress]:
    """A spinner on stderr for long work (see :class:`Progress`)."""
    with err.status(Text(title)) as status:
        yield Progress(status.update)


class Progress:
    """Reports long work on stderr: what runs now in the spinner, finished items as lines above it.
    Text is shown as given, never read as markup."""

    def __init__(self, update: Callable[[Text], None]) -> None:
        self._update = update

    def running(self, text: str) -> None:
        """Show ``text`` in the spinner."""
        self._update(Text(text))

    def done(self, text: str) -> None:
        """Print ``text`` (a finished item) above the spinner."""
        err.print(Text(f"  {text}"), highlight=False, soft_wrap=True)

    def both(self, text: str) -> None:
        """Show ``text`` in the spinner and keep it as a line."""
        self.running(text)
        self.done(text)


def check_sandbox(name: str, *, probe: bool = True) -> None:
    """Refuse an unknown (or, with ``probe``, an unusable) sandbox before any expensive work."""
    if name != "auto" and name not in BACKENDS:
        known = ["auto", *sorted(BACKENDS)]
        close = difflib.get_close_matches(name, known, n=1)
        hint = f"did you mean {close[0]!r}? " if close else ""
        raise TrainFailError(f"unknown sandbox {name!r}; {hint}--sandbox takes one of {', '.join(known)}")
    if probe:
        resolve_backend(name)


def chosen_judge(args: argparse.Namespace) -> Judge | None:
    """The judge the options (or ``$TRAINFAIL_JUDGE_MODEL``) ask for (``None``: the rubric judge)."""
    model = getattr(args, "judge_model", None) or os.environ.get(JUDGE_MODEL_ENV)
    base_url = getattr(args, "judge_base_url", None) or os.environ.get(JUDGE_BASE_URL_ENV) or None
    if base_url and not model:
        raise TrainFailError(f"--judge-base-url needs --judge-model NAME (or ${JUDGE_MODEL_ENV})")
    if not model:
        return None
    return LLMJudge(model, base_url, api_key_env=getattr(args, "judge_api_key_env", None))


def ensure_runtime(arm: str) -> None:
    try:
        find_runtime(arm)
    except RuntimeMissingError:
        err.print(f"the {arm} runtime is not built yet; building it now (once, a few minutes)")
        build_with_progress(arm, force=False)


def build_with_progress(arm: str, *, force: bool) -> Runtime:
    with spinner(f"building the {arm} runtime") as progress:
        return build_runtime(arm, progress=progress.both, force=force)


def short(path: Path) -> str:
    try:
        return os.path.relpath(path)
    except ValueError:
        return str(path)


def headline(outcome: ScenarioOutcome) -> tuple[str, str]:
    """The first numeric metric's name and value (the harness lists its key metric first)."""
    for key, value in outcome.metrics.items():
        if isinstance(value, float):
            return key, f"{value:.1e}"
    return "", ""
