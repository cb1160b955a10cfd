"""The wire types of ``trainfail serve``: OpenEnv action, observation and state models.

An action is one tool call, as in-process. Whatever a client sends for a step becomes a
:class:`TrainFailAction`: a payload that does not fit the schema is kept as an ``invalid``
action carrying the reason, and the session answers it with an error observation through the
env's own step (so it is a recorded step, as a bad action is in-process) instead of an error
frame. The size limit is the env's own (:func:`gym_trainfail.tools.action_chars`, characters
of the action as compact JSON, each character counted once): the server passes the action to
``env.step`` as a dict, so an action gets the same answer in-process and over the server.
"""

from __future__ import annotations

from typing import Any, cast

from openenv.core.env_server.types import Action, Observation, State
from pydantic import Field, ValidationError, model_validator

from gym_trainfail.text import ACTION_MAX_CHARS

#: The most characters an action may take (:func:`gym_trainfail.tools.action_chars`: compact JSON,
#: each character counted once, however the client escaped it).
MAX_ACTION_CHARS = ACTION_MAX_CHARS
MAX_TOOL_NAME_CHARS = 64


class TrainFailAction(Action):
    """One tool call: ``{"tool": NAME, "arguments": {...}}`` (the case's tools, see ``/schema``)."""

    tool: str = Field(default="", max_length=MAX_TOOL_NAME_CHARS, description="tool name, e.g. read_file")
    arguments: dict[str, Any] = Field(default_factory=dict, description="the tool's arguments")
    invalid: str | None = Field(
        default=None,
        description="set by the server when the payload did not fit this schema; the step answers with an error",
    )

    @model_validator(mode="wrap")
    @classmethod
    def _keep_invalid(cls, data: Any, handler: Any) -> TrainFailAction:
        """A payload that fails validation becomes an ``invalid`` action instead of an error frame."""
        if isinstance(data, dict) and data.get("invalid") is not None:
            return cast(
                TrainFailAction, cls.model_construct(invalid="'invalid' is set by the server, never by a client")
            )
        try:
            action: TrainFailAction = handler(data)
        except ValidationError as exc:
            return cast(TrainFailAction, cls.model_construct(invalid=_describe(exc)))
        return action


class TrainFailObservation(Observation):
    """What a step or reset answers: the observation text and the in-process ``info`` dict.

    ``reward`` is the step's reward exactly as ``env.step`` returns it (0.0 until the episode
    ends, then the private grade of the last revision); ``done`` is terminated or truncated."""

    text: str = Field(default="", description="the observation (tool output, or the task prompt at reset)")
    terminated: bool = False
    truncated: bool = False
    info: dict[str, Any] = Field(default_factory=dict, description="the env's info dict for this step")


class TrainFailState(State):
    """The session's episode: ``episode_id`` names it (``reset(resume=episode_id)`` continues it)."""

    case: str | None = None
    arm: str | None = None
    run_dir: str | None = None
    done: bool = False


def _describe(exc: ValidationError) -> str:
    """The first few problems, one line each, without echoing the (maybe huge) input."""
    parts = []
    for error in exc.errors(include_url=False, include_input=False)[:5]:
        where = ".".join(str(p) for p in error.get("loc", ())) or "action"
        parts.append(f"{where}: {error.get('msg', 'invalid')}")
    return "the action does not fit the schema (" + "; ".join(parts) + '); expected {"tool": NAME, "arguments": {...}}'
