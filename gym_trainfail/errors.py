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
