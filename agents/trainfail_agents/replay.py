"""Bringing a checkpointed conversation up to date with the episode's transcript on resume.

Steps the env completed after the last checkpoint are not run again: their recorded results
answer the pending tool calls of the last reply, in order (the loop checkpoints each reply
before running its calls, so that is where such steps come from). A recorded step with no
pending call to answer (a checkpoint lost entirely) is rebuilt as a call and its result.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from trainfail_agents.checkpoint import Conversation
from trainfail_agents.messages import replayed_call, tool_result


def replay(conversation: Conversation, records: Iterable[Mapping[str, Any]]) -> int:
    """Add the results of transcript ``records`` the conversation lacks; how many were added."""
    added = 0
    for record in sorted(records, key=lambda r: int(r["index"])):
        index = int(record["index"])
        if index <= conversation.steps_done:
            continue
        pending = conversation.pending_calls()
        if pending:
            call = pending[0]
        else:
            call = replayed_call(index, record.get("tool"), record.get("arguments"))
            conversation.messages.append({"role": "assistant", "content": None, "tool_calls": [call]})
        conversation.messages.append(tool_result(str(call["id"]), str(record.get("observation", ""))))
        conversation.steps_done = index
        added += 1
    return added
