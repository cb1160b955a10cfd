"""Chat messages: the model's replies as the conversation keeps them, and tool results.

A tool call whose arguments are not a JSON object is run as the model sent it (the env
answers with an error observation), but the conversation keeps it with ``{}`` as arguments:
endpoints such as vLLM and SGLang re-parse the arguments of earlier calls and refuse the whole
request when they cannot, which would end the episode over one bad call.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

Message = dict[str, Any]


def assistant_message(reply: Mapping[str, Any], turn: int) -> Message:
    """The reply to keep in the conversation (content and tool calls, nothing provider-specific)."""
    calls = [_tool_call(call, turn, position) for position, call in enumerate(reply.get("tool_calls") or [])]
    message: Message = {"role": "assistant", "content": reply.get("content")}
    if calls:
        message["tool_calls"] = calls
    return message


#: Where providers put a reasoning summary next to the content (vLLM/SGLang/DeepSeek, OpenRouter).
REASONING_FIELDS = ("reasoning_content", "reasoning")


def said(reply: Mapping[str, Any]) -> list[tuple[str, str]]:
    """What a reply says, as ``(kind, text)``: its reasoning summary (where the API returns one)
    and its content, each when not empty."""
    found = []
    for key in REASONING_FIELDS:
        value = reply.get(key)
        if isinstance(value, str) and value.strip():
            found.append(("reasoning", value))
            break
    content = reply.get("content")
    if isinstance(content, str) and content.strip():
        found.append(("message", content))
    return found


def _tool_call(call: Mapping[str, Any], turn: int, position: int) -> dict[str, Any]:
    function = call.get("function") or {}
    raw = function.get("arguments")
    kept = _kept_arguments(raw)
    kept_call: dict[str, Any] = {
        # Some local servers omit ids; results must name the call they answer.
        "id": str(call.get("id") or f"call_{turn}_{position}"),
        "type": "function",
        "function": {"name": str(function.get("name") or ""), "arguments": kept},
    }
    if raw != kept:
        kept_call["raw_arguments"] = raw  # what the env must see; only the loop keeps it
    return kept_call


def _kept_arguments(arguments: object) -> str:
    if isinstance(arguments, Mapping):
        return json.dumps(arguments)
    text = str(arguments or "").strip() or "{}"
    try:
        parsed = json.loads(text)
    except json.JSONDecodeError:
        return "{}"
    return text if isinstance(parsed, dict) else "{}"


def action(call: Mapping[str, Any]) -> dict[str, Any]:
    """The env action for a kept tool call: the model's own arguments, however malformed."""
    function = call["function"]
    return {"name": function["name"], "arguments": call.get("raw_arguments", function["arguments"])}


def for_request(messages: list[Message]) -> list[Message]:
    """Messages as the endpoint takes them (without what only the loop keeps)."""
    return [_strip(m) for m in messages]


def _strip(message: Message) -> Message:
    if "tool_calls" not in message:
        return message
    calls = [{k: v for k, v in c.items() if k != "raw_arguments"} for c in message["tool_calls"]]
    return {**message, "tool_calls": calls}


def tool_result(call_id: str, observation: str) -> Message:
    """The result of one tool call."""
    return {"role": "tool", "tool_call_id": call_id, "content": observation}


def replayed_call(index: int, tool: str | None, arguments: Mapping[str, Any] | None) -> dict[str, Any]:
    """A tool call rebuilt from the transcript, for steps the checkpoint missed."""
    return {
        "id": f"call_replayed_{index}",
        "type": "function",
        "function": {"name": tool or "unknown", "arguments": json.dumps(dict(arguments or {}))},
    }
