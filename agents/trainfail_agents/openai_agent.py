"""``openai``: a tool-calling agent loop over any OpenAI-compatible Chat Completions endpoint.

Each turn sends the conversation (fitted to the context window, see :mod:`.context`) with the
env's tools as function tools; every tool call in the reply runs, in order, as one env step,
and its observation goes back as the tool result. Usage is reported to the episode ledger
per turn, and what the model says (content and reasoning summaries) is recorded as messages
(diagnosis milestones read them; they never affect the reward). Provider faults are retried
and their time recorded as suspensions (:mod:`.retry`); the conversation is checkpointed
after every turn and every tool result (:mod:`.checkpoint`), so ``trainfail run --resume
RUN_DIR`` continues where it stopped without running finished steps again (:mod:`.replay`).

The API key comes from the environment only (``OPENAI_API_KEY``, or the variable named by the
``api_key_env`` option): agent options are recorded in ``episode.json``, so a key must never
be one, and the loop scrubs it from everything it writes.
"""

from __future__ import annotations

import functools
import logging
import os
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import openai

from gym_trainfail.env import TrainFailEnv, read_transcript
from gym_trainfail.errors import TrainFailError
from trainfail_agents import checkpoint, messages
from trainfail_agents.checkpoint import Conversation
from trainfail_agents.context import ContextPolicy, fit
from trainfail_agents.prompts import CONTINUE_PROMPT, resumed_note, system_prompt
from trainfail_agents.replay import replay
from trainfail_agents.retry import ContextOverflowError, ProviderError, RetryPolicy, call_with_retries
from trainfail_agents.usage import TokenCounter, TurnUsage

log = logging.getLogger(__name__)

#: Key used for endpoints that take none (a local vLLM or SGLang server), when no key is set.
PLACEHOLDER_KEY = "EMPTY"
#: Share of the context window a request may fill by our estimate (estimates are approximate).
CONTEXT_SAFETY = 0.95
#: Times a request is shortened further after the endpoint says it does not fit.
MAX_CONTEXT_SHRINKS = 4
CALIBRATION_RANGE = (0.5, 4.0)

OPTIONS = (
    "model", "base_url", "api_key_env", "context_tokens", "max_output_tokens", "temperature",
    "request_timeout_s", "max_retries", "retry_base_s", "retry_max_s", "max_idle_turns",
    "parallel_tool_calls", "extra_body",
)  # fmt: skip


@dataclass(frozen=True)
class Settings:
    """The loop's tunables (all of them agent options)."""

    context_tokens: int = 128_000
    max_output_tokens: int | None = None
    temperature: float | None = None
    request_timeout_s: float = 600.0
    max_idle_turns: int = 3
    parallel_tool_calls: bool | None = None
    extra_body: Mapping[str, Any] | None = None


class OpenAIAgent:
    """Plays an episode with a model behind an OpenAI-compatible Chat Completions endpoint."""

    name = "openai"

    def __init__(
        self,
        model: str | None = None,
        base_url: str | None = None,
        *,
        api_key_env: str = "OPENAI_API_KEY",
        context_tokens: int = 128_000,
        max_output_tokens: int | None = None,
        temperature: float | None = None,
        request_timeout_s: float = 600.0,
        max_retries: int = 6,
        retry_base_s: float = 1.0,
        retry_max_s: float = 60.0,
        max_idle_turns: int = 3,
        parallel_tool_calls: bool | None = None,
        extra_body: Mapping[str, Any] | None = None,
        **unknown: Any,
    ) -> None:
        _reject_unknown(unknown)
        self.model = model or os.environ.get("OPENAI_MODEL") or ""
        if not self.model:
            raise TrainFailError("the openai agent needs a model: pass --model NAME or set OPENAI_MODEL")
        self.base_url = base_url or os.environ.get("OPENAI_BASE_URL") or None
        key = os.environ.get(api_key_env) or ""
        if not key and self.base_url is None:
            raise TrainFailError(
                f"no API key: set {api_key_env} in the environment (for a local server that takes no key, "
                "give its --base-url)"
            )
        self._key = key or PLACEHOLDER_KEY
        self.settings = Settings(
            context_tokens=int(context_tokens),
            max_output_tokens=max_output_tokens,
            temperature=temperature,
            request_timeout_s=float(request_timeout_s),
            max_idle_turns=int(max_idle_turns),
            parallel_tool_calls=parallel_tool_calls,
            extra_body=extra_body,
        )
        self.retry = RetryPolicy(max_retries=int(max_retries), base_s=float(retry_base_s), max_s=float(retry_max_s))
        self.counter = TokenCounter()
        # The loop does its own retries, so it can time them and record them as suspensions.
        self._client = openai.OpenAI(
            api_key=self._key, base_url=self.base_url, max_retries=0, timeout=self.settings.request_timeout_s
        )

    def play(self, env: TrainFailEnv, observation: str, info: dict[str, Any]) -> float:
        """Drive the episode to its end; a provider that fails for good ends the loop with 0.0,
        leaving the episode resumable."""
        inner = cast(TrainFailEnv, env.unwrapped)
        run_dir = inner.run_dir
        if run_dir is None:
            raise TrainFailError("play() needs an env that has been reset")
        loop = _Loop(self, inner, run_dir)
        conversation = loop.resume(observation) if info.get("resumed") else loop.start(observation)
        try:
            return loop.run(conversation)
        except ProviderError as exc:
            reason = self.redact(str(exc))
            conversation.notes["stopped"] = {"t": time.time(), "reason": reason}
            loop.save(conversation)
            log.warning("%s; the episode can be continued with: trainfail run --resume %s", reason, run_dir)
            return 0.0

    def secrets(self) -> tuple[str, ...]:
        """Strings that must never be written anywhere: the API key."""
        return (self._key,) if self._key != PLACEHOLDER_KEY else ()

    def redact(self, text: str) -> str:
        """``text`` without the API key."""
        for secret in self.secrets():
            text = text.replace(secret, "[redacted]")
        return text

    def create(self, request: dict[str, Any]) -> dict[str, Any]:
        """One Chat Completions call, as plain data."""
        response = self._client.chat.completions.create(**request)
        return cast(dict[str, Any], response.model_dump())


def _reject_unknown(unknown: Mapping[str, Any]) -> None:
    if "api_key" in unknown:
        raise TrainFailError(
            "api_key is not an agent option: agent options are recorded in episode.json. Set OPENAI_API_KEY "
            "in the environment (or name another variable with api_key_env=NAME)"
        )
    if unknown:
        raise TrainFailError(f"unknown openai agent option(s) {sorted(unknown)}; the options are: {', '.join(OPTIONS)}")


class _Loop:
    """One episode's run of the loop."""

    def __init__(self, agent: OpenAIAgent, env: TrainFailEnv, run_dir: Path) -> None:
        self.agent = agent
        self.env = env
        self.run_dir = run_dir
        self.specs: list[dict[str, Any]] = env.tool_specs
        self.note_due = False

    # -- conversation lifecycle ----------------------------------------------------------

    def start(self, observation: str) -> Conversation:
        """A new conversation: the system prompt and the env's first observation."""
        workspace = "/workspace" if self.env.backend != "process" else "the shell's working directory"
        conversation = Conversation(
            messages=[
                {"role": "system", "content": system_prompt(workspace)},
                {"role": "user", "content": observation},
            ],
            notes={"model": self.agent.model, "base_url": self.agent.base_url},
        )
        self.save(conversation)
        return conversation

    def resume(self, observation: str) -> Conversation:
        """The checkpointed conversation, brought up to date with the transcript."""
        conversation = checkpoint.load(self.run_dir) or self.start(observation)
        if conversation.notes.get("model") not in (None, self.agent.model):
            log.warning("resuming a conversation held with %s using %s", conversation.notes["model"], self.agent.model)
            conversation.notes["model"] = self.agent.model
        replayed = replay(conversation, read_transcript(self.run_dir))
        conversation.notes.pop("stopped", None)
        conversation.notes["resumes"] = int(conversation.notes.get("resumes", 0)) + 1
        log.info("resumed at step %d (%d step results replayed)", conversation.steps_done, replayed)
        self.note_due = True
        self.save(conversation)
        return conversation

    def save(self, conversation: Conversation) -> None:
        """Checkpoint the conversation, without the key."""
        checkpoint.save(self.run_dir, conversation, self.agent.secrets())

    # -- the loop ------------------------------------------------------------------------

    def run(self, conversation: Conversation) -> float:
        """Turns until the episode ends; its final reward."""
        while True:
            ended, reward = self.run_pending(conversation)
            if ended:
                return reward
            if self.note_due:
                conversation.messages.append({"role": "user", "content": resumed_note(self.env.case.workspace_exclude)})
                self.note_due = False
            reply = self.ask(conversation)
            conversation.turns += 1
            for kind, text in messages.said(reply):
                self.env.record_message(self.agent.redact(text), kind=kind)
            message = messages.assistant_message(reply, conversation.turns)
            conversation.messages.append(message)
            if "tool_calls" not in message:
                ended, reward = self.idle(conversation, str(message.get("content") or ""))
                if ended:
                    return reward
            else:
                conversation.idle_turns = 0
            self.save(conversation)

    def run_pending(self, conversation: Conversation) -> tuple[bool, float]:
        """Run the unanswered tool calls of the last reply, in order, each as one env step."""
        for call in conversation.pending_calls():
            observation, reward, terminated, truncated, info = self.env.step(messages.action(call))
            conversation.messages.append(messages.tool_result(str(call["id"]), observation))
            conversation.steps_done = int(info.get("step", conversation.steps_done + 1))
            self.save(conversation)
            if terminated or truncated:
                return True, float(reward)
        return False, 0.0

    def idle(self, conversation: Conversation, text: str) -> tuple[bool, float]:
        """A reply without a tool call: ask to go on, or end after too many in a row."""
        conversation.idle_turns += 1
        if conversation.idle_turns <= self.agent.settings.max_idle_turns:
            conversation.messages.append({"role": "user", "content": CONTINUE_PROMPT})
            return False, 0.0
        self.save(conversation)
        summary = f"ended by the loop after {conversation.idle_turns} replies without a tool call: {text[:2000]}"
        _, reward, terminated, truncated, info = self.env.step({"tool": "finish", "arguments": {"summary": summary}})
        conversation.steps_done = int(info.get("step", conversation.steps_done + 1))
        self.save(conversation)
        return terminated or truncated, float(reward)

    # -- one request ---------------------------------------------------------------------

    def ask(self, conversation: Conversation) -> dict[str, Any]:
        """The model's reply to the conversation; its usage goes to the ledger."""
        for _ in range(MAX_CONTEXT_SHRINKS + 1):
            request = self.request(conversation)
            try:
                data = call_with_retries(functools.partial(self.agent.create, request), self.agent.retry, self.suspend)
            except ContextOverflowError as exc:
                self.shrink(conversation, exc)
                continue
            choices = data.get("choices") or []
            reply: dict[str, Any] = dict(choices[0].get("message") or {}) if choices else {}
            self.account(conversation, request["messages"], data.get("usage"), reply)
            return reply
        raise ProviderError(
            f"the conversation does not fit the model's context even after shortening it {MAX_CONTEXT_SHRINKS} "
            f"times (context {self.context_tokens(conversation)} tokens); give a larger context_tokens or a model "
            "with a longer context"
        )

    def request(self, conversation: Conversation) -> dict[str, Any]:
        """The Chat Completions request for the conversation, fitted to the context."""
        policy = ContextPolicy(budget_tokens=self.message_budget(conversation))
        fitted = fit(conversation.messages, policy, self.agent.counter)
        settings = self.agent.settings
        request: dict[str, Any] = {
            "model": self.agent.model,
            "messages": messages.for_request(fitted),
            "tools": self.specs,
        }
        optional = {
            "max_completion_tokens": settings.max_output_tokens,
            "temperature": settings.temperature,
            "parallel_tool_calls": settings.parallel_tool_calls,
            "extra_body": dict(settings.extra_body) if settings.extra_body else None,
        }
        request.update({k: v for k, v in optional.items() if v is not None})
        return request

    def context_tokens(self, conversation: Conversation) -> int:
        """The context window in force: the option, or less once the endpoint stated less."""
        limit = self.agent.settings.context_tokens
        return min(limit, conversation.context_limit) if conversation.context_limit else limit

    def message_budget(self, conversation: Conversation) -> int:
        """Tokens (by our count) the messages of a request may take."""
        context = self.context_tokens(conversation)
        reserve = self.agent.settings.max_output_tokens or min(8192, context // 4)
        room = (context * CONTEXT_SAFETY - reserve) / conversation.calibration
        return max(1, int(room) - self.agent.counter.tools(self.specs))

    def shrink(self, conversation: Conversation, exc: ContextOverflowError) -> None:
        """The endpoint said the request does not fit: learn its window, or aim lower."""
        current = self.context_tokens(conversation)
        if exc.limit is not None and exc.limit < current:
            conversation.context_limit = exc.limit
        else:
            conversation.context_limit = int(current * 0.75)
        log.info("the endpoint refused a request as too long; context now %d tokens", conversation.context_limit)

    def account(
        self,
        conversation: Conversation,
        request: list[dict[str, Any]],
        usage: Mapping[str, Any] | None,
        reply: Mapping[str, Any],
    ) -> None:
        """Report one turn's usage to the ledger and recalibrate our estimates against it."""
        counter = self.agent.counter
        reported = TurnUsage.reported(usage)
        if reported is not None:
            estimate = counter.messages(request) + counter.tools(self.specs)
            low, high = CALIBRATION_RANGE
            conversation.calibration = min(high, max(low, reported.input / max(1, estimate)))
        turn = reported or counter.estimate(request, self.specs, reply)
        self.env.record_usage(turn.input, turn.output, turn.cached_input, estimated=turn.estimated)

    def suspend(self, start: float, end: float, reason: str) -> None:
        """Record time lost to provider faults."""
        self.env.record_suspension(start, end, self.agent.redact(reason))
