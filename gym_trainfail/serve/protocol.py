"""The ``/ws`` messages of ``trainfail serve``: OpenEnv's wire format, read against a closed schema.

A client sends one JSON object per text frame:

- ``{"type": "reset", "data": {OPTIONS}}``: start (or resume) the session's episode,
- ``{"type": "step", "data": {"tool": NAME, "arguments": {...}}}``: one tool call,
- ``{"type": "state"}``: the session's episode (id, step count, case, arm, run directory),
- ``{"type": "close"}``: end the session.

The server answers each with one frame: ``{"type": "observation", "data": ...}``,
``{"type": "state", "data": ...}`` or ``{"type": "error", "data": {"message", "code"}}``.

:func:`parse_frame` turns a frame into a :class:`Message`, or a :class:`Refusal` (an error frame;
the session goes on) for anything else: a binary frame, text that is not JSON, JSON that is not an
object (``[]``, ``1``, ``null``), nesting deeper than :data:`MAX_DEPTH`, an unknown ``type``
(OpenEnv's ``mcp`` included: this server does not serve MCP) or fields the type does not take.
A step whose *action* does not fit the action schema is still a step: it becomes an ``invalid``
:class:`~gym_trainfail.serve.models.TrainFailAction`, answered by the env as a recorded error step.

Parsing runs on the session's own thread, never on the server's event loop, so a large frame
does not hold up the other sessions.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Final

from gym_trainfail.serve.models import TrainFailAction

#: Deepest nesting a frame may have (a step is 4 levels: message, data, arguments, value).
MAX_DEPTH: Final = 32
#: The message types this server serves.
MESSAGE_TYPES: Final = ("reset", "step", "state", "close")
#: OpenEnv's error codes used here.
INVALID_JSON: Final = "INVALID_JSON"
UNKNOWN_TYPE: Final = "UNKNOWN_TYPE"
VALIDATION_ERROR: Final = "VALIDATION_ERROR"
EXECUTION_ERROR: Final = "EXECUTION_ERROR"
CAPACITY_REACHED: Final = "CAPACITY_REACHED"
SESSION_ERROR: Final = "SESSION_ERROR"

_SHAPE = 'expected one JSON object per text frame: {"type": "reset"|"step"|"state"|"close", ...}'


@dataclass(frozen=True)
class Reset:
    options: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Step:
    action: TrainFailAction


@dataclass(frozen=True)
class StateRequest:
    pass


@dataclass(frozen=True)
class Close:
    pass


@dataclass(frozen=True)
class Refusal:
    """A frame that is not a message: answered with an error frame, the session goes on."""

    code: str
    message: str


Message = Reset | Step | StateRequest | Close


def parse_frame(frame: str | bytes) -> Message | Refusal:
    """The message in one WebSocket frame, or why it is not one (never raises)."""
    if not isinstance(frame, str):
        return Refusal(INVALID_JSON, f"binary frames are not part of this protocol; {_SHAPE}")
    try:
        value = json.loads(frame)
    except json.JSONDecodeError as exc:
        return Refusal(INVALID_JSON, f"the frame is not JSON ({exc.msg} at position {exc.pos}); {_SHAPE}")
    except RecursionError:
        return Refusal(VALIDATION_ERROR, f"the frame nests deeper than {MAX_DEPTH} levels; {_SHAPE}")
    if not isinstance(value, dict):
        found = "null" if value is None else type(value).__name__
        return Refusal(INVALID_JSON, f"the frame is a JSON {found}, not an object; {_SHAPE}")
    if depth(value) > MAX_DEPTH:
        return Refusal(VALIDATION_ERROR, f"the frame nests deeper than {MAX_DEPTH} levels; {_SHAPE}")
    kind = value.get("type")
    if not isinstance(kind, str) or kind not in MESSAGE_TYPES:
        shown = repr(kind)[:60] if isinstance(kind, str) else f"a {type(kind).__name__}"
        return Refusal(UNKNOWN_TYPE, f"message type {shown} is not served here; {_SHAPE}")
    allowed = {"type", "data"} if kind in ("reset", "step") else {"type"}
    extra = sorted(str(k)[:40] for k in value if k not in allowed)
    if extra:
        return Refusal(VALIDATION_ERROR, f"a {kind} message takes only {sorted(allowed)}, not {extra[:5]}")
    if kind in ("state", "close"):
        return StateRequest() if kind == "state" else Close()
    if "data" not in value and kind == "step":
        return Refusal(VALIDATION_ERROR, 'a step message needs "data": the action {"tool": NAME, "arguments": {...}}')
    data = value.get("data", {})
    if not isinstance(data, dict):
        return Refusal(VALIDATION_ERROR, f'"data" of a {kind} message must be an object, not {type(data).__name__}')
    if kind == "reset":
        return Reset(options=data)
    return Step(action=TrainFailAction.model_validate(data))  # never raises: a misfit is an invalid action


def depth(value: object) -> int:
    """How deeply ``value`` nests lists and objects (a scalar is 0), without recursing."""
    deepest = 0
    stack: list[tuple[object, int]] = [(value, 0)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        level += 1
        if level > MAX_DEPTH:
            return level  # no need to walk the rest
        deepest = max(deepest, level)
        stack.extend((child, level) for child in children if isinstance(child, (dict, list)))
    return deepest
