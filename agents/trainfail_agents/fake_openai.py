"""A fake OpenAI-compatible Chat Completions server, for tests and demos without a model.

It serves real HTTP on loopback, so the real ``openai`` client talks to it. It replays a
script of turns (tool calls and text) in order, one per answered request, and reports usage
like OpenAI does, cached prompt tokens included (the prefix a request shares with the one
before it, in 64-token blocks). It can also fail on purpose: by request number it answers
429 or 5xx, drops the connection, hangs (until the client times out or the test releases it),
or refuses a key; and it can enforce a context window. A fault never uses up a turn, so a
retried request gets the turn the failed one would have had.

Demo: ``python -m trainfail_agents.fake_openai --case TrainFail/DDPTokenAverage-v1`` serves a
script that applies the case's private reference repair through the ordinary tools; point
``trainfail run --agent openai --model fake --base-url URL`` at the URL it prints.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import socket
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Literal

from gym_trainfail.cases import load_case
from gym_trainfail.registry import get_case
from trainfail_agents.scripted import patched_files

CHARS_PER_TOKEN = 4
CACHE_BLOCK = 64
EXHAUSTED = "(the fake server's script has no more turns)"

FaultKind = Literal["rate_limit", "server_error", "drop", "hang", "auth"]


@dataclass(frozen=True)
class ScriptedCall:
    """One tool call of a scripted turn; ``arguments`` as an object, or raw text (maybe malformed)."""

    name: str
    arguments: Mapping[str, Any] | str = field(default_factory=dict)

    def wire_arguments(self) -> str:
        return self.arguments if isinstance(self.arguments, str) else json.dumps(self.arguments)


@dataclass(frozen=True)
class Turn:
    """One scripted reply: tool calls (run in order) and/or text (and a reasoning summary, sent as
    ``reasoning_content`` like vLLM and SGLang do); usage reported or not."""

    calls: tuple[ScriptedCall, ...] = ()
    content: str | None = None
    report_usage: bool = True
    reasoning: str | None = None


def call(name: str, arguments: Mapping[str, Any] | str | None = None, /, **kwargs: Any) -> ScriptedCall:
    """A scripted tool call: ``call("read_file", path="README.md")`` or ``call("shell", '{"bad json')``."""
    return ScriptedCall(name, arguments if arguments is not None else kwargs)


def turn(
    *calls: ScriptedCall, content: str | None = None, report_usage: bool = True, reasoning: str | None = None
) -> Turn:
    """A scripted reply."""
    return Turn(calls=calls, content=content, report_usage=report_usage, reasoning=reasoning)


@dataclass(frozen=True)
class Fault:
    """A failure to inject instead of answering one request."""

    kind: FaultKind
    status: int = 500
    retry_after: float | None = None
    #: For ``hang``: how long to hold the request before dropping it (or until released).
    seconds: float = 30.0


RATE_LIMIT = Fault("rate_limit", status=429, retry_after=0.0)
SERVER_ERROR = Fault("server_error", status=500)
DROP = Fault("drop")


def hang(seconds: float = 30.0) -> Fault:
    """Hold the request without answering, then drop it."""
    return Fault("hang", seconds=seconds)


@dataclass
class ServedRequest:
    """A request the server received and what it did with it."""

    number: int
    body: dict[str, Any]
    authorization: str
    outcome: str = "pending"
    usage: dict[str, Any] | None = None

    @property
    def messages(self) -> list[dict[str, Any]]:
        return list(self.body.get("messages") or [])


class FakeOpenAIServer:
    """The fake endpoint; use as a context manager, or ``start()`` and ``close()``."""

    def __init__(
        self,
        turns: Sequence[Turn],
        *,
        faults: Mapping[int, Fault] | None = None,
        api_key: str | None = None,
        context_limit: int | None = None,
        model: str = "fake-model",
        host: str = "127.0.0.1",
        port: int = 0,
    ) -> None:
        self.turns = list(turns)
        self.faults = dict(faults or {})
        self.api_key = api_key
        self.context_limit = context_limit
        self.model = model
        self.requests: list[ServedRequest] = []
        self.served_turns = 0
        self._previous_prompt = ""
        self._lock = threading.Condition()
        self._release = threading.Event()
        self._httpd = ThreadingHTTPServer((host, port), _handler_for(self))
        self._httpd.daemon_threads = True
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        """The base URL to give the client (``.../v1``)."""
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}/v1"

    def start(self) -> FakeOpenAIServer:
        """Serve in a background thread."""
        self._thread = threading.Thread(target=self._httpd.serve_forever, name="fake-openai", daemon=True)
        self._thread.start()
        return self

    def close(self) -> None:
        """Stop serving; hung requests are dropped."""
        self._release.set()
        self._httpd.shutdown()
        self._httpd.server_close()

    def __enter__(self) -> FakeOpenAIServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    def release(self) -> None:
        """Let requests held by ``hang`` faults go (they are dropped)."""
        self._release.set()

    def usage_totals(self) -> dict[str, int]:
        """Sums of the usage this server reported: input, output, cached_input."""
        totals = {"input": 0, "output": 0, "cached_input": 0}
        for request in self.requests:
            if request.usage:
                totals["input"] += request.usage["prompt_tokens"]
                totals["output"] += request.usage["completion_tokens"]
                totals["cached_input"] += request.usage["prompt_tokens_details"]["cached_tokens"]
        return totals

    def wait_for(self, predicate: Callable[[ServedRequest], bool], timeout: float) -> ServedRequest:
        """Block until a received request satisfies ``predicate``; ``TimeoutError`` after ``timeout``."""
        deadline = time.monotonic() + timeout
        with self._lock:
            while True:
                found = next((r for r in self.requests if predicate(r)), None)
                if found is not None:
                    return found
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(f"no matching request within {timeout:.0f} s ({len(self.requests)} received)")
                self._lock.wait(left)

    # -- answering -----------------------------------------------------------------------

    def receive(self, body: dict[str, Any], authorization: str) -> ServedRequest:
        with self._lock:
            request = ServedRequest(len(self.requests) + 1, body, authorization)
            self.requests.append(request)
            self._lock.notify_all()
            return request

    def answer(self, request: ServedRequest) -> tuple[int, dict[str, str], dict[str, Any]] | Fault:
        """The response to ``request``: status, headers, body; or the fault to act out."""
        with self._lock:
            fault = self.faults.get(request.number)
            if self.api_key is not None and request.authorization != f"Bearer {self.api_key}":
                fault = Fault("auth", status=401)
            if fault is not None:
                request.outcome = fault.kind
                return fault if fault.kind in ("drop", "hang") else _error_response(fault)
            prompt = _prompt_text(request.body)
            prompt_tokens = _tokens(prompt)
            if self.context_limit is not None and prompt_tokens > self.context_limit:
                request.outcome = "context_length_exceeded"
                return 400, {}, _context_error(self.context_limit, prompt_tokens)
            scripted = self.turns[self.served_turns] if self.served_turns < len(self.turns) else None
            self.served_turns += 1
            message = _message(scripted, self.served_turns)
            usage = _usage(prompt, self._previous_prompt, prompt_tokens, message)
            self._previous_prompt = prompt
            reported = scripted is None or scripted.report_usage
            request.outcome = f"turn {self.served_turns}"
            request.usage = usage if reported else None
            return 200, {}, _completion(self.model, self.served_turns, message, usage if reported else None)

    def wait_released(self, seconds: float) -> None:
        self._release.wait(seconds)


def _prompt_text(body: Mapping[str, Any]) -> str:
    # Tools first, as providers place them: they belong to the cacheable prefix.
    return json.dumps(body.get("tools") or [], sort_keys=True) + json.dumps(body.get("messages") or [])


def _tokens(text: str) -> int:
    return math.ceil(len(text) / CHARS_PER_TOKEN)


def _usage(prompt: str, previous: str, prompt_tokens: int, message: Mapping[str, Any]) -> dict[str, Any]:
    shared = len(os.path.commonprefix([prompt, previous]))
    cached = min(prompt_tokens, shared // CHARS_PER_TOKEN // CACHE_BLOCK * CACHE_BLOCK)
    completion = _tokens(json.dumps(message))
    return {
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion,
        "total_tokens": prompt_tokens + completion,
        "prompt_tokens_details": {"cached_tokens": cached},
    }


def _message(scripted: Turn | None, number: int) -> dict[str, Any]:
    if scripted is None:
        return {"role": "assistant", "content": EXHAUSTED}
    message: dict[str, Any] = {"role": "assistant", "content": scripted.content}
    if scripted.reasoning is not None:
        message["reasoning_content"] = scripted.reasoning
    if scripted.calls:
        message["tool_calls"] = [
            {
                "id": f"call_{number}_{position}",
                "type": "function",
                "function": {"name": c.name, "arguments": c.wire_arguments()},
            }
            for position, c in enumerate(scripted.calls)
        ]
    return message


def _completion(model: str, number: int, message: dict[str, Any], usage: dict[str, Any] | None) -> dict[str, Any]:
    body: dict[str, Any] = {
        "id": f"chatcmpl-fake-{number}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": "tool_calls" if message.get("tool_calls") else "stop",
            }
        ],
    }
    if usage is not None:
        body["usage"] = usage
    return body


def _error_response(fault: Fault) -> tuple[int, dict[str, str], dict[str, Any]]:
    headers = {"retry-after": f"{fault.retry_after:g}"} if fault.retry_after is not None else {}
    messages = {
        "rate_limit": ("Rate limit reached for requests", "rate_limit_exceeded"),
        "auth": ("Incorrect API key provided", "invalid_api_key"),
        "server_error": ("The server had an error while processing your request", None),
    }
    text, code = messages.get(fault.kind, messages["server_error"])
    return fault.status, headers, {"error": {"message": text, "type": fault.kind, "param": None, "code": code}}


def _context_error(limit: int, tokens: int) -> dict[str, Any]:
    text = (
        f"This model's maximum context length is {limit} tokens. However, your messages resulted in {tokens} "
        "tokens. Please reduce the length of the messages."
    )
    return {"error": {"message": text, "type": "invalid_request_error", "param": "messages",
                      "code": "context_length_exceeded"}}  # fmt: skip


def _handler_for(server: FakeOpenAIServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the stdlib's name
            pass  # tests stay quiet

        def do_GET(self) -> None:  # noqa: N802 - the stdlib's name
            if self.path.rstrip("/").endswith("/models"):
                self._send(200, {}, {"object": "list", "data": [{"id": server.model, "object": "model"}]})
            else:
                self._send(404, {}, {"error": {"message": f"no route {self.path}"}})

        def do_POST(self) -> None:  # noqa: N802 - the stdlib's name
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length)
            if not self.path.rstrip("/").endswith("/chat/completions"):
                self._send(404, {}, {"error": {"message": f"no route {self.path}"}})
                return
            request = server.receive(json.loads(raw or b"{}"), self.headers.get("Authorization", ""))
            answer = server.answer(request)
            if isinstance(answer, Fault):
                if answer.kind == "hang":
                    server.wait_released(answer.seconds)
                self._drop()
                return
            self._send(*answer)

        def _send(self, status: int, headers: Mapping[str, str], body: Mapping[str, Any]) -> None:
            payload = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            for name, value in headers.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(payload)

        def _drop(self) -> None:
            self.close_connection = True
            with contextlib.suppress(OSError):  # the client may have gone already
                self.connection.shutdown(socket.SHUT_RDWR)

    return Handler


# -- scripts ----------------------------------------------------------------------------------


def repair_turns(files: Mapping[str, str | None], check_command: str | None, devices: int) -> list[Turn]:
    """A script that looks around, reads each file in ``files`` (parallel calls), writes its
    new content (or deletes it when ``None``), runs the check as a job, submits and finishes."""
    turns = [turn(call("list_files"))]
    turns.append(turn(*(call("read_file", path=path) for path in files)))
    writes = [
        call("write_file", path=path, content=content)
        if content is not None
        else call("shell", command=f"rm -f -- '{path}'")
        for path, content in files.items()
    ]
    turns.append(turn(*writes, content="Writing the changes."))
    if check_command:
        turns.append(turn(call("run_job", command=check_command, devices=devices)))
    turns.append(turn(call("submit")))
    turns.append(turn(call("finish", summary="applied the changes")))
    return turns


def load_script(path: Path) -> tuple[list[Turn], dict[int, Fault]]:
    """A script from JSON: ``{"turns": [{"calls": [{"name", "arguments"}], "content",
    "report_usage"}], "faults": {"<request number>": {"kind", "status", "retry_after", "seconds"}}}``."""
    data = json.loads(path.read_text(encoding="utf-8"))
    turns = [
        Turn(
            calls=tuple(ScriptedCall(c["name"], c.get("arguments", {})) for c in t.get("calls", [])),
            content=t.get("content"),
            report_usage=bool(t.get("report_usage", True)),
        )
        for t in data.get("turns", [])
    ]
    faults = {int(n): Fault(**spec) for n, spec in (data.get("faults") or {}).items()}
    return turns, faults


def _case_script(case_id: str) -> list[Turn]:
    folder = Path(case_id)
    case = load_case(folder) if (folder / "case.toml").is_file() else get_case(case_id)
    files = patched_files(case.workspace_dir, case.reference_patch)
    return repair_turns(files, case.check_command, case.topology.devices_per_job)


def main(argv: Sequence[str] | None = None) -> int:
    """Serve a script until interrupted."""
    parser = argparse.ArgumentParser(prog="python -m trainfail_agents.fake_openai", description=__doc__.split("\n")[0])
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--case", help="serve a script applying this case's reference repair (an id or a case folder)")
    source.add_argument("--script", type=Path, help="serve a JSON script (see load_script)")
    parser.add_argument("--port", type=int, default=8765)
    args = parser.parse_args(argv)
    turns, faults = load_script(args.script) if args.script else (_case_script(args.case), {})
    with FakeOpenAIServer(turns, faults=faults, port=args.port) as server:
        print(f"fake OpenAI endpoint at {server.url} ({len(turns)} turns); Ctrl-C to stop", flush=True)
        with contextlib.suppress(KeyboardInterrupt):
            threading.Event().wait()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
