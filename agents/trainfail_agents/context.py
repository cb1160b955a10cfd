"""Fitting a long conversation into the model's context window.

The conversation is kept whole (and checkpointed whole); each request sends a fitted copy.
The policy, applied oldest turn first and only until the request fits:

1. Old tool results longer than ``head + tail`` characters keep their first and last lines,
   with a notice of how much was left out.
2. Old tool results shrink to a one-line notice.
3. Long string arguments of old tool calls (``write_file`` contents) and long old replies
   keep their start, with a notice.
4. The oldest turns are dropped whole (a tool call never without its result) and replaced
   by one line saying how many turns and which tools were left out.
5. Last resort: the latest turn's results are cut down to what still fits, then its long
   arguments.

"Old" means every turn but the most recent ``keep_recent`` ones; the system prompt and the
task are always kept. Once a request overflows, it is cut to ``low_water`` of the budget, not
just under it, so the shortened prefix stays the same for a while and prompt caching keeps
working. The decisions depend only on the conversation, so they are the same on every run.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from trainfail_agents.usage import TokenCounter

Message = dict[str, Any]


@dataclass(frozen=True)
class ContextPolicy:
    """How much of the conversation a request may carry, and how to shorten it."""

    budget_tokens: int
    keep_recent: int = 1
    head_chars: int = 1200
    tail_chars: int = 1200
    argument_chars: int = 400
    low_water: float = 0.75


def omitted_notice(count: int, unit: str = "characters") -> str:
    """The marker left where text was cut."""
    return f"[... {count} {unit} omitted to fit the context window; repeat the call if you need them ...]"


@dataclass
class _Fitter:
    messages: list[Message]
    counter: TokenCounter
    target: int

    def total(self) -> int:
        return self.counter.messages(self.messages)

    def fits(self) -> bool:
        return self.total() <= self.target


def fit(messages: list[Message], policy: ContextPolicy, counter: TokenCounter) -> list[Message]:
    """A copy of ``messages`` that fits ``policy.budget_tokens`` (or as close as it can get)."""
    if counter.messages(messages) <= policy.budget_tokens:
        return messages
    fitter = _Fitter(copy.deepcopy(messages), counter, int(policy.budget_tokens * policy.low_water))
    stages: list[Callable[[_Fitter, ContextPolicy], None]] = [
        _shorten_old_results,
        _stub_old_results,
        _shorten_old_arguments,
        _drop_old_turns,
        _shorten_latest,
    ]
    for stage in stages:
        if fitter.fits():
            break
        stage(fitter, policy)
    return fitter.messages


def _turn_starts(messages: list[Message]) -> list[int]:
    """Indices of the assistant messages after the system prompt and the task."""
    return [i for i, m in enumerate(messages) if i >= 2 and m.get("role") == "assistant"]


def _old_span(fitter: _Fitter, policy: ContextPolicy) -> int:
    """Index where the turns that are always kept begin."""
    starts = _turn_starts(fitter.messages)
    if len(starts) <= policy.keep_recent:
        return starts[0] if starts else len(fitter.messages)
    return starts[-policy.keep_recent] if policy.keep_recent else len(fitter.messages)


def _old_messages(fitter: _Fitter, policy: ContextPolicy, role: str) -> Iterator[Message]:
    end = _old_span(fitter, policy)
    for message in fitter.messages[2:end]:
        if message.get("role") == role:
            yield message


def _head_tail(text: str, head: int, tail: int) -> str:
    if len(text) <= head + tail:
        return text
    cut_start = text.rfind("\n", 0, head) + 1 or head
    cut_end = text.find("\n", len(text) - tail) if tail else len(text)
    cut_end = len(text) - tail if cut_end == -1 else cut_end + 1
    if cut_end <= cut_start:
        return text
    omitted = cut_end - cut_start
    return f"{text[:cut_start]}{omitted_notice(omitted)}\n{text[cut_end:]}"


def _shorten_old_results(fitter: _Fitter, policy: ContextPolicy) -> None:
    for message in _old_messages(fitter, policy, "tool"):
        message["content"] = _head_tail(str(message.get("content") or ""), policy.head_chars, policy.tail_chars)
        if fitter.fits():
            return


def _stub_old_results(fitter: _Fitter, policy: ContextPolicy) -> None:
    for message in _old_messages(fitter, policy, "tool"):
        content = str(message.get("content") or "")
        if len(content) > 200:
            message["content"] = content.split("\n", 1)[0][:120] + "\n" + omitted_notice(len(content))
            if fitter.fits():
                return


def _shorten_old_arguments(fitter: _Fitter, policy: ContextPolicy) -> None:
    limit = policy.argument_chars
    for message in _old_messages(fitter, policy, "assistant"):
        content = message.get("content")
        if isinstance(content, str) and len(content) > limit:
            message["content"] = content[:limit] + omitted_notice(len(content) - limit)
        for call in message.get("tool_calls") or []:
            function = call.get("function") or {}
            function["arguments"] = _shorten_arguments(str(function.get("arguments") or "{}"), limit)
        if fitter.fits():
            return


def _shorten_arguments(arguments: str, limit: int) -> str:
    """Shorten long string values, keeping the arguments valid JSON (endpoints re-parse them)."""
    try:
        parsed = json.loads(arguments)
    except json.JSONDecodeError:
        return "{}"
    if not isinstance(parsed, dict):
        return "{}"
    for key, value in parsed.items():
        if isinstance(value, str) and len(value) > limit:
            parsed[key] = value[:limit] + omitted_notice(len(value) - limit)
    return json.dumps(parsed)


def _drop_old_turns(fitter: _Fitter, policy: ContextPolicy) -> None:
    messages = fitter.messages
    end = _old_span(fitter, policy)
    # Cut only where a turn starts, so a tool result never loses its call.
    cuts = [i for i in _turn_starts(messages) if 2 < i < end] + [end]
    for cut in cuts:
        dropped = messages[2:cut]
        turns = sum(1 for m in dropped if m.get("role") == "assistant")
        if not turns:
            continue
        tools = [str((c.get("function") or {}).get("name")) for m in dropped for c in m.get("tool_calls") or []]
        fitter.messages = messages[:2] + [_dropped_note(turns, tools)] + messages[cut:]
        if fitter.fits():
            return


def _dropped_note(turns: int, tools: list[str]) -> Message:
    names = ", ".join(sorted(set(tools))) or "none"
    return {
        "role": "user",
        "content": f"[{turns} earlier turns ({len(tools)} tool calls: {names}) omitted to fit the context window]",
    }


def _shorten_latest(fitter: _Fitter, policy: ContextPolicy) -> None:
    starts = _turn_starts(fitter.messages)
    latest = fitter.messages[starts[-1] if starts else 2 :]
    results = [m for m in latest if m.get("role") == "tool"]
    for _ in range(3):  # each pass estimates characters from tokens; a few passes settle it
        for message in results:
            if fitter.fits():
                return
            content = str(message.get("content") or "")
            excess = (fitter.total() - fitter.target) * 4 + 400
            keep = max(200, len(content) - excess)
            message["content"] = _head_tail(content, keep // 2, keep // 2)
    for message in latest:
        for call in message.get("tool_calls") or []:
            if fitter.fits():
                return
            function = call.get("function") or {}
            function["arguments"] = _shorten_arguments(str(function.get("arguments") or "{}"), policy.argument_chars)
