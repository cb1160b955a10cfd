"""The conversation, checkpointed after every model turn and every tool result.

It lives in ``RUN_DIR/agent/conversation.json``, replaced atomically (a temporary file, fsync,
rename), so a crash leaves the previous version or the new one, never a torn one. It holds the
messages, the ledger position (env steps whose results the messages include) and what the
loop learned about the endpoint; never the API key, which is scrubbed from every text written.
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from gym_trainfail.errors import TrainFailError

CHECKPOINT_VERSION = 1
CHECKPOINT_DIR = "agent"
CHECKPOINT_FILE = "conversation.json"

Message = dict[str, Any]


@dataclass
class Conversation:
    """The agent loop's state: everything needed to continue an episode."""

    messages: list[Message]
    #: Env steps completed whose results are in ``messages`` (the ledger position).
    steps_done: int = 0
    #: Model requests answered so far.
    turns: int = 0
    #: Replies in a row without a tool call.
    idle_turns: int = 0
    #: Reported prompt tokens over our estimate for the last request (estimates run low for
    #: tokenizers other than ours).
    calibration: float = 1.0
    #: The model's context window as the endpoint stated it in a refusal, when it did.
    context_limit: int | None = None
    notes: dict[str, Any] = field(default_factory=dict)

    def pending_calls(self) -> list[dict[str, Any]]:
        """Tool calls of the last assistant message that have no result yet, in order."""
        for index in range(len(self.messages) - 1, -1, -1):
            message = self.messages[index]
            if message.get("role") == "assistant":
                answered = {m.get("tool_call_id") for m in self.messages[index + 1 :] if m.get("role") == "tool"}
                return [c for c in message.get("tool_calls") or [] if c.get("id") not in answered]
        return []


def checkpoint_path(run_dir: Path) -> Path:
    """Where an episode's conversation checkpoint lives."""
    return run_dir / CHECKPOINT_DIR / CHECKPOINT_FILE


def save(run_dir: Path, conversation: Conversation, secrets: tuple[str, ...] = ()) -> None:
    """Write the checkpoint atomically; ``secrets`` never reach the file."""
    path = checkpoint_path(run_dir)
    path.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps({"version": CHECKPOINT_VERSION, **asdict(conversation)}, ensure_ascii=False)
    for secret in secrets:
        if secret:
            text = text.replace(secret, "[redacted]")
    handle, temporary = tempfile.mkstemp(prefix=".conversation-", suffix=".json", dir=path.parent)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as stream:
            stream.write(text)
            stream.flush()
            os.fsync(stream.fileno())
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    directory = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(directory)  # the rename itself must survive a power cut
    finally:
        os.close(directory)


def load(run_dir: Path) -> Conversation | None:
    """The checkpointed conversation, or ``None`` when the episode has none yet."""
    path = checkpoint_path(run_dir)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, json.JSONDecodeError) as exc:
        raise TrainFailError(f"the conversation checkpoint {path} is unreadable ({exc}); delete it to rebuild "
                             "the conversation from the transcript") from None  # fmt: skip
    if data.pop("version", None) != CHECKPOINT_VERSION:
        raise TrainFailError(f"{path} was written by another version of the openai agent; expected version "
                             f"{CHECKPOINT_VERSION}")  # fmt: skip
    return Conversation(**data)
