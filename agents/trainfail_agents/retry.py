"""Calling the model endpoint through its faults: bounded retries with backoff.

Rate limits (429), server faults (5xx, 408, 409), dropped connections and time-outs are
retried with exponential backoff and jitter, honouring ``Retry-After``. The time from the first
failed attempt to the attempt that succeeds (or to giving up) is reported as one suspension:
it is the provider's time, not the agent's. Anything else (a refused key, a malformed request)
is permanent and ends the loop at once. A request too long for the model's context is its own
case: the caller shortens the conversation and asks again.
"""

from __future__ import annotations

import random
import re
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

import openai

T = TypeVar("T")

#: Statuses worth retrying besides 5xx: request time-out, conflict (lock contention), rate limit.
TRANSIENT_STATUSES = frozenset({408, 409, 429})
_CONTEXT_WORDS = re.compile(
    r"context[ _]length|context window|maximum context|too many tokens|prompt is too long|reduce the length",
    re.IGNORECASE,
)
_STATUS_PREFIX = re.compile(r"^Error code: \d+ - ")
_CONTEXT_LIMIT = re.compile(r"maximum context length is (\d+)", re.IGNORECASE)


class ProviderError(Exception):
    """The model endpoint failed for good: a permanent refusal, or faults past the retry bound."""


class ContextOverflowError(Exception):
    """The request was longer than the model's context; ``limit`` is the window when stated."""

    def __init__(self, message: str, limit: int | None) -> None:
        super().__init__(message)
        self.limit = limit


@dataclass(frozen=True)
class RetryPolicy:
    """How often and how long to retry one request."""

    max_retries: int = 6
    base_s: float = 1.0
    max_s: float = 60.0

    def delay(self, attempt: int, retry_after: float | None) -> float:
        """Seconds to wait before retry number ``attempt + 1``."""
        if retry_after is not None:
            return min(self.max_s, max(0.0, retry_after))
        # Jitter spreads the retries of a batch of episodes that hit the same limit at once.
        return min(self.max_s, self.base_s * 2.0**attempt * (0.5 + random.random() / 2))


@dataclass(frozen=True)
class Fault:
    """A classified provider failure."""

    reason: str
    transient: bool
    retry_after: float | None = None


def classify(exc: openai.APIError) -> Fault:
    """What kind of failure ``exc`` is."""
    if isinstance(exc, openai.APITimeoutError):
        return Fault("request timed out", transient=True)
    if isinstance(exc, openai.APIConnectionError):
        return Fault("connection failed", transient=True)
    if isinstance(exc, openai.APIStatusError):
        status = exc.status_code
        transient = status >= 500 or status in TRANSIENT_STATUSES
        label = "rate limited" if status == 429 else f"HTTP {status}"
        return Fault(label, transient=transient, retry_after=_retry_after(exc))
    return Fault(f"unusable response ({type(exc).__name__})", transient=False)


def context_overflow(exc: openai.APIError) -> ContextOverflowError | None:
    """The context-overflow refusal in ``exc``, if that is what it is."""
    if not isinstance(exc, openai.APIStatusError) or exc.status_code not in (400, 413, 422):
        return None
    if exc.code != "context_length_exceeded" and not _CONTEXT_WORDS.search(exc.message):
        return None
    match = _CONTEXT_LIMIT.search(exc.message)
    return ContextOverflowError(exc.message, int(match.group(1)) if match else None)


def _retry_after(exc: openai.APIStatusError) -> float | None:
    headers = exc.response.headers
    for name, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
        value = headers.get(name)
        if value is not None:
            try:
                return float(value) * scale
            except ValueError:
                return None  # an HTTP date: fall back to our own backoff
    return None


Report = Callable[[float, float, str], None]


def call_with_retries(
    send: Callable[[], T],
    policy: RetryPolicy,
    report: Report,
    sleep: Callable[[float], None] = time.sleep,
) -> T:
    """``send()``, retried through transient faults; ``report(start, end, reason)`` gets the
    time lost to faults. Raises :class:`ProviderError` or :class:`ContextOverflowError`."""
    lost_since: float | None = None
    faults: Counter[str] = Counter()
    for attempt in range(policy.max_retries + 1):
        started = time.time()
        try:
            result = send()
        except openai.APIError as exc:
            overflow = context_overflow(exc)
            if overflow is not None:
                # The request's own length, not the provider, is at fault: only earlier faults count.
                if lost_since is not None:
                    report(lost_since, started, _summary(faults))
                raise overflow from exc
            lost_since = started if lost_since is None else lost_since
            fault = classify(exc)
            faults[fault.reason] += 1
            if not fault.transient or attempt == policy.max_retries:
                report(lost_since, time.time(), _summary(faults))
                raise ProviderError(_give_up_message(exc, fault, attempt + 1)) from exc
            sleep(policy.delay(attempt, fault.retry_after))
            continue
        if lost_since is not None:
            report(lost_since, started, _summary(faults))
        return result
    raise AssertionError("unreachable: the last attempt returns or raises")


def _summary(faults: Counter[str]) -> str:
    return "provider: " + ", ".join(f"{reason} x{count}" for reason, count in faults.items())


def _give_up_message(exc: openai.APIError, fault: Fault, attempts: int) -> str:
    # The client prefixes "Error code: 500 - "; the reason already names the status.
    detail = _STATUS_PREFIX.sub("", " ".join(str(exc.message).split()))[:300]
    if fault.transient:
        return f"the model endpoint kept failing ({fault.reason}) after {attempts} attempts: {detail}"
    return f"the model endpoint refused the request ({fault.reason}): {detail}"
