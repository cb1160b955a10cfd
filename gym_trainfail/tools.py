"""The agent's tools: their specs (OpenAI function-tool format), parsing and validation.

An action is ``{"tool": NAME, "arguments": {...}}`` as JSON text or as a dict. The
OpenAI shape ``{"name": NAME, "arguments": "<json>"}`` is accepted too, since agent loops often
pass a model's tool call through unchanged. Anything else is a :class:`ToolError` whose
message says what was expected. An action's size is :func:`action_chars` (one rule for every
way an action arrives: in-process as text or a dict, or over ``trainfail serve``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from gym_trainfail.errors import ToolError
from gym_trainfail.text import ACTION_MAX_CHARS

DEFAULT_SHELL_TIMEOUT_S = 120
MAX_SHELL_TIMEOUT_S = 1800
DEFAULT_JOB_TIMEOUT_S = 900
MAX_JOB_TIMEOUT_S = 3600


def _fn(name: str, description: str, properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {
                "type": "object",
                "properties": properties,
                "required": required,
                "additionalProperties": False,
            },
        },
    }


def tool_specs(workspace: str, device_description: str, output_limit: int) -> list[dict[str, Any]]:
    """The tool list an agent sees, describing this sandbox's workspace and devices."""
    path = {"type": "string", "description": f"path relative to {workspace} (or absolute under it)"}
    return [
        _fn(
            "shell",
            f"Run a bash command in the sandbox (working directory {workspace}), CPU only, no network. "
            f"Processes do not outlive the command. Output over {output_limit} bytes per stream is "
            "truncated with a notice; the whole process tree is killed at the timeout.",
            {
                "command": {"type": "string", "description": "bash command line"},
                "timeout_s": {
                    "type": "integer", "minimum": 1, "maximum": MAX_SHELL_TIMEOUT_S,
                    "description": f"seconds before the command is killed (default {DEFAULT_SHELL_TIMEOUT_S})",
                },
            },
            ["command"],
        ),
        _fn(
            "read_file",
            "Read a UTF-8 text file from the workspace, optionally a range of lines (1-based, inclusive).",
            {
                "path": path,
                "start_line": {"type": "integer", "minimum": 1},
                "end_line": {"type": "integer", "minimum": 1},
            },
            ["path"],
        ),
        _fn(
            "write_file",
            "Create or overwrite a text file in the workspace (parent folders are created).",
            {"path": path, "content": {"type": "string"}},
            ["path", "content"],
        ),
        _fn(
            "edit_file",
            "Replace an exact piece of text in a workspace file. old_text must occur exactly once "
            "unless replace_all is true.",
            {
                "path": path,
                "old_text": {"type": "string"},
                "new_text": {"type": "string"},
                "replace_all": {"type": "boolean"},
            },
            ["path", "old_text", "new_text"],
        ),
        _fn(
            "list_files",
            "List files and folders in the workspace, with sizes.",
            {"path": path, "max_depth": {"type": "integer", "minimum": 1, "maximum": 10}},
            [],
        ),
        _fn(
            "run_job",
            f"Run a command with devices allocated to it ({device_description}); use it for anything that "
            "launches multi-rank training, e.g. `torchrun --nproc_per_node $NPROC ...`. Inside, NPROC and "
            "TRAINFAIL_DEVICES hold the device count and TRAINFAIL_BACKEND the torch.distributed backend. "
            "Waits while the devices are busy; time and device use are recorded. At the timeout every process of "
            "the job is stopped and what it printed so far is shown. "
            "Python processes print every thread's stack to stderr on SIGABRT (`kill -ABRT <pid>`, which ends "
            "the process), e.g. `CMD & sleep 60; pkill -ABRT -P $!; wait` for the workers of a torchrun CMD; "
            "`torchrun --tee 3` prefixes each line with its rank, so ranks' stacks printed at once do not interleave.",
            {
                "command": {"type": "string", "description": "bash command line"},
                "devices": {"type": "integer", "minimum": 1, "description": "number of devices (ranks)"},
                "timeout_s": {
                    "type": "integer", "minimum": 1, "maximum": MAX_JOB_TIMEOUT_S,
                    "description": f"seconds before the job is killed (default {DEFAULT_JOB_TIMEOUT_S})",
                },
            },
            ["command", "devices"],
        ),
        _fn(
            "submit",
            "Record the current workspace as a revision. Answers with the revision number only.",
            {},
            [],
        ),
        _fn(
            "finish",
            "End the episode. The last submitted revision is the one that counts.",
            {"summary": {"type": "string", "description": "optional note on what you did"}},
            [],
        ),
    ]  # fmt: skip


@dataclass(frozen=True)
class ToolCall:
    """A parsed, validated tool call."""

    tool: str
    arguments: Mapping[str, Any]


ACTION_SHAPE = 'expected a JSON object {"tool": "<name>", "arguments": {...}}'
#: JSON text may spell one character as a 12-character escape (a surrogate pair such as ``\ud83d\ude00``):
#: text longer than this cannot hold an action within :data:`ACTION_MAX_CHARS`, and is not parsed.
ACTION_MAX_TEXT_CHARS = 12 * ACTION_MAX_CHARS


def action_chars(action: Mapping[str, Any]) -> int:
    """The size the action limit counts: characters of the action written as compact JSON with
    every character as itself (``json.dumps(action, ensure_ascii=False, separators=(",", ":"))``).

    A CJK character or an emoji counts one, however a client escaped it on the wire, so the same
    action has the same size in-process (text or dict) and over ``trainfail serve``."""
    try:
        return len(json.dumps(action, ensure_ascii=False, separators=(",", ":"), default=str))
    except (ValueError, RecursionError) as exc:  # a circular or absurdly deep dict (in-process only)
        raise ToolError(f"the action cannot be written as JSON ({exc}); {ACTION_SHAPE}") from None


def parse_action(action: object, specs: list[dict[str, Any]]) -> ToolCall:
    """Parse and validate one action against ``specs``; raises :class:`ToolError`."""
    if isinstance(action, bytes):
        action = action.decode("utf-8", "replace")
    if isinstance(action, str):
        if len(action) > ACTION_MAX_TEXT_CHARS:
            raise ToolError(f"the action text is {len(action):,} characters; the limit is {ACTION_MAX_CHARS:,} "
                            "characters of the action as JSON (each character counted once)")  # fmt: skip
        try:
            action = json.loads(action)
        except json.JSONDecodeError as exc:
            raise ToolError(f"the action is not valid JSON ({exc.msg} at position {exc.pos}); {ACTION_SHAPE}") from None
        except RecursionError:
            raise ToolError(f"the action nests too deeply to parse; {ACTION_SHAPE}") from None
    if not isinstance(action, Mapping):
        raise ToolError(f"the action is a {type(action).__name__}; {ACTION_SHAPE}")
    if (size := action_chars(action)) > ACTION_MAX_CHARS:
        raise ToolError(f"the action is {size:,} characters; the limit is {ACTION_MAX_CHARS:,} characters of the "
                        "action as JSON (each character counted once)")  # fmt: skip
    name = action.get("tool", action.get("name"))
    if not isinstance(name, str):
        raise ToolError(f"the action has no tool name; {ACTION_SHAPE}")
    unknown = set(action) - {"tool", "name", "arguments", "id", "type"}
    if unknown:
        raise ToolError(f"unexpected keys {sorted(unknown)} in the action; {ACTION_SHAPE}")
    arguments = action.get("arguments", {})
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments) if arguments.strip() else {}
        except json.JSONDecodeError as exc:
            raise ToolError(f"the arguments of {name!r} are not valid JSON ({exc.msg}); expected an object") from None
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, Mapping):
        raise ToolError(f"the arguments of {name!r} must be an object, got {type(arguments).__name__}")
    by_name = {s["function"]["name"]: s["function"] for s in specs}
    if name not in by_name:
        raise ToolError(f"unknown tool {name!r}; the tools are: {', '.join(by_name)}")
    validate_arguments(name, arguments, by_name[name]["parameters"])
    return ToolCall(tool=name, arguments=dict(arguments))


_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "boolean": (bool,),
    "number": (int, float),
}


def validate_arguments(tool: str, arguments: Mapping[str, Any], schema: Mapping[str, Any]) -> None:
    """Check ``arguments`` against a tool's (flat) JSON schema."""
    properties: Mapping[str, Any] = schema.get("properties", {})
    missing = [k for k in schema.get("required", []) if k not in arguments]
    if missing:
        raise ToolError(f"{tool}: missing required argument(s) {missing}; it takes {_signature(schema)}")
    extra = [k for k in arguments if k not in properties]
    if extra:
        raise ToolError(f"{tool}: unexpected argument(s) {extra}; it takes {_signature(schema)}")
    for key, value in arguments.items():
        prop = properties[key]
        expected = prop["type"]
        ok = isinstance(value, _TYPES[expected]) and not (expected in ("integer", "number") and isinstance(value, bool))
        if not ok:
            raise ToolError(f"{tool}: argument {key!r} must be {expected}, got {type(value).__name__}")
        if "minimum" in prop and value < prop["minimum"]:
            raise ToolError(f"{tool}: argument {key!r} must be at least {prop['minimum']}, got {value}")
        if "maximum" in prop and value > prop["maximum"]:
            raise ToolError(f"{tool}: argument {key!r} must be at most {prop['maximum']}, got {value}")


def _signature(schema: Mapping[str, Any]) -> str:
    required = set(schema.get("required", []))
    parts = [f"{k}{'' if k in required else '?'}: {v['type']}" for k, v in schema.get("properties", {}).items()]
    return "(" + ", ".join(parts) + ")" if parts else "no arguments"
