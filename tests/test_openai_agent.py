"""The ``openai`` agent loop through the real ``openai`` client against the fake endpoint.

Episodes run on the fast echo case with real bubblewrap; the fake server (real HTTP on
loopback) replays scripted turns, reports usage and injects faults.
"""

from __future__ import annotations

import inspect
import itertools
import json
import os
import signal
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gym_trainfail.cases import BUG_VOCABULARY, CaseSpec
from gym_trainfail.env import read_transcript
from gym_trainfail.episode import EpisodeResult, resume_episode, run_episode
from gym_trainfail.errors import TrainFailError
from gym_trainfail.ledger import Summary, iter_kind, read_events, summarize
from gym_trainfail.runtimes import Runtime
from trainfail_agents import checkpoint, prompts
from trainfail_agents.checkpoint import Conversation
from trainfail_agents.context import ContextPolicy, fit, omitted_notice
from trainfail_agents.fake_openai import (
    DROP,
    RATE_LIMIT,
    SERVER_ERROR,
    FakeOpenAIServer,
    ServedRequest,
    Turn,
    call,
    hang,
    turn,
)
from trainfail_agents.openai_agent import OPTIONS, OpenAIAgent
from trainfail_agents.replay import replay
from trainfail_agents.retry import RetryPolicy
from trainfail_agents.scripted import patched_files
from trainfail_agents.usage import TokenCounter, TurnUsage

KEY = "sk-fake-loop-key-4f1b2c9d8e7a6b5c"
MODEL = "fake-model"
#: Fast retries and time-outs, so fault tests take seconds.
FAST = {"retry_base_s": 0.05, "retry_max_s": 0.2, "request_timeout_s": 1.0}


@pytest.fixture
def api_key(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.delenv("OPENAI_MODEL", raising=False)
    return KEY


@pytest.fixture
def episodes(runtime: Runtime, bwrap_usable: None, api_key: str) -> None:
    """What an echo episode through the loop needs: the runtime, bubblewrap and a key."""


def repaired_files(case: CaseSpec) -> dict[str, str | None]:
    """The files the case's private reference patch changes, with their new text."""
    return patched_files(case.workspace_dir, case.reference_patch)


def echo_script(case: CaseSpec) -> list[Turn]:
    """The echo repair: look, read two files in one turn, write, run the check as a job, submit, finish."""
    fixed = repaired_files(case)["report.py"]
    return [
        turn(call("list_files")),
        turn(call("read_file", path="README.md"), call("read_file", path="report.py")),
        turn(call("write_file", path="report.py", content=fixed)),
        turn(call("run_job", command="python report.py", devices=2)),
        turn(call("submit")),
        turn(call("finish", summary="the report prints the documented value")),
    ]


ECHO_TOOLS = ["list_files", "read_file", "read_file", "write_file", "run_job", "submit", "finish"]


def options(server: FakeOpenAIServer, **extra: Any) -> dict[str, Any]:
    return {"model": MODEL, "base_url": server.url, **FAST, **extra}


def play(case: CaseSpec, run_dir: Path, server: FakeOpenAIServer, **extra: Any) -> EpisodeResult:
    agent_options = options(server, **extra)
    agent = OpenAIAgent(**agent_options)
    return run_episode(agent, case=case, sandbox="bwrap", run_dir=run_dir, agent_options=agent_options)


def tools_run(run_dir: Path) -> list[str | None]:
    return [record["tool"] for record in read_transcript(run_dir)]


def ledger_summary(run_dir: Path) -> Summary:
    return summarize(read_events(run_dir / "ledger.jsonl"))


def assert_key_absent(run_dir: Path) -> None:
    leaked = [p for p in run_dir.rglob("*") if p.is_file() and KEY.encode() in p.read_bytes()]
    assert leaked == []


def saved(run_dir: Path) -> Conversation:
    conversation = checkpoint.load(run_dir)
    assert conversation is not None
    return conversation


def tool_results(request: ServedRequest) -> list[str]:
    return [m["content"] for m in request.messages if m["role"] == "tool"]


# -- episodes through the real client ---------------------------------------------------------


def test_episode_tokens_match_the_endpoint_and_faults_are_suspensions(
    echo_case: CaseSpec, episodes: None, tmp_path: Path
) -> None:
    faults = {2: RATE_LIMIT, 3: SERVER_ERROR, 4: DROP, 5: hang(10)}
    with FakeOpenAIServer(echo_script(echo_case), faults=faults, api_key=KEY) as server:
        result = play(echo_case, tmp_path / "run", server)

    assert (result.reward, result.reward_status) == (1.0, "graded")
    assert tools_run(result.run_dir) == ECHO_TOOLS
    transcript = read_transcript(result.run_dir)
    assert [r["arguments"].get("path") for r in transcript[1:3]] == ["README.md", "report.py"]
    # The parallel calls' results went back in call order, answering their own call ids.
    third = next(r for r in server.requests if r.outcome == "turn 3")
    assert tool_results(third)[-2:] == [transcript[1]["observation"], transcript[2]["observation"]]
    assert [m["tool_call_id"] for m in third.messages if m["role"] == "tool"][-2:] == ["call_2_0", "call_2_1"]

    summary = result.summary
    totals = server.usage_totals()
    assert (summary.input_tokens, summary.output_tokens, summary.cached_input_tokens) == (
        totals["input"],
        totals["output"],
        totals["cached_input"],
    )
    assert totals["cached_input"] > 0 and not summary.tokens_estimated
    assert summary.total_tokens == totals["input"] + totals["output"]

    suspensions = list(iter_kind(read_events(result.run_dir / "ledger.jsonl"), "suspension"))
    assert [s["reason"] for s in suspensions] == [
        "provider: rate limited x1, HTTP 500 x1, connection failed x1, request timed out x1"
    ]
    assert summary.suspended_seconds > 1.0  # the hung request alone held the loop for the 1 s time-out
    assert summary.adjusted_seconds == pytest.approx(
        summary.raw_seconds - summary.suspended_seconds - summary.queue_wait_seconds
    )
    assert {r.authorization for r in server.requests} == {f"Bearer {KEY}"}
    assert_key_absent(result.run_dir)


def test_malformed_tool_call_and_missing_usage(echo_case: CaseSpec, episodes: None, tmp_path: Path) -> None:
    fixed = repaired_files(echo_case)["report.py"]
    script = [
        turn(call("write_file", '{"path": "report.py", "content": "ANSWER = 42'), report_usage=False),
        turn(content="Let me think about this."),
        turn(call("write_file", path="report.py", content=fixed), call("submit"), call("finish")),
    ]
    with FakeOpenAIServer(script) as server:
        result = play(echo_case, tmp_path / "run", server)

    assert result.reward == 1.0
    first = read_transcript(result.run_dir)[0]
    expected = (
        "error: the arguments of 'write_file' are not valid JSON (Unterminated string starting at); expected an object"
    )
    assert (first["tool"], first["observation"]) == (None, expected)
    second, third = server.requests[1], server.requests[2]
    malformed = second.messages[-2]["tool_calls"][0]
    assert malformed["function"] == {"name": "write_file", "arguments": "{}"}  # kept re-parseable
    assert tool_results(second) == [expected]
    assert third.messages[-1] == {"role": "user", "content": prompts.CONTINUE_PROMPT}

    tokens = list(iter_kind(read_events(result.run_dir / "ledger.jsonl"), "tokens"))
    assert [t["estimated"] for t in tokens] == [True, False, False]
    assert tokens[0]["input"] > 1000 and tokens[0]["output"] > 5 and tokens[0]["cached_input"] == 0
    assert result.summary.tokens_estimated


def test_small_context_budget_truncates_old_outputs(echo_case: CaseSpec, episodes: None, tmp_path: Path) -> None:
    fixed = repaired_files(echo_case)["report.py"]
    big = [turn(call("shell", command=f"seq {n} {n + 700}")) for n in (1, 10_000, 20_000)]
    script = [*big, turn(call("write_file", path="report.py", content=fixed)), turn(call("submit")),
              turn(call("finish"))]  # fmt: skip
    context = 8_000
    # The server enforces the same window in its own count: an overflow would show as a refusal.
    with FakeOpenAIServer(script, context_limit=context) as server:
        result = play(echo_case, tmp_path / "run", server, context_tokens=context)

    assert result.reward == 1.0
    assert [r.outcome for r in server.requests] == [f"turn {n}" for n in range(1, 7)]
    prompts_sent = [r.usage["prompt_tokens"] for r in server.requests if r.usage]
    # Each request adds a turn, so without shortening the prompts only grow: a request below its
    # predecessor is old outputs cut (when depends on the size of the task and tool specs).
    assert any(later < earlier for earlier, later in itertools.pairwise(prompts_sent)), prompts_sent
    assert max(prompts_sent) < context
    last = server.requests[-1]
    notice_tail = "characters omitted to fit the context window; repeat the call if you need them ...]"
    assert [notice_tail in text for text in tool_results(last)] == [True, True, True, False, False]
    assert last.messages[1]["content"] == server.requests[0].messages[1]["content"]  # the task is kept whole


def test_context_refusal_is_learned_and_the_episode_goes_on(
    echo_case: CaseSpec, episodes: None, tmp_path: Path
) -> None:
    fixed = repaired_files(echo_case)["report.py"]
    script = [turn(call("shell", command="seq 1 3000")), turn(call("shell", command="seq 5000 8000")),
              turn(call("write_file", path="report.py", content=fixed), call("submit"), call("finish"))]  # fmt: skip
    with FakeOpenAIServer(script, context_limit=9_000) as server:
        result = play(echo_case, tmp_path / "run", server)

    assert result.reward == 1.0
    outcomes = [r.outcome for r in server.requests]
    assert "context_length_exceeded" in outcomes and outcomes[-1] == "turn 3"
    assert saved(result.run_dir).context_limit == 9_000


def test_permanent_failure_ends_the_loop_and_the_episode_resumes(
    echo_case: CaseSpec, episodes: None, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    faults = {2: SERVER_ERROR, 3: SERVER_ERROR, 4: SERVER_ERROR}
    with FakeOpenAIServer(echo_script(echo_case), faults=faults) as server:
        stopped = play(echo_case, tmp_path / "run", server, max_retries=2)
        reason = (
            "the model endpoint kept failing (HTTP 500) after 3 attempts: "
            "The server had an error while processing your request"
        )
        assert (stopped.reward, stopped.reward_status) == (0.0, "not-ended")
        assert saved(stopped.run_dir).notes["stopped"]["reason"] == reason
        assert f"{reason}; the episode can be continued with: trainfail run --resume {stopped.run_dir}" in caplog.text
        assert tools_run(stopped.run_dir) == ["list_files"]

        resumed = resume_episode(stopped.run_dir, sandbox="bwrap")

    assert (resumed.reward, resumed.reward_status) == (1.0, "graded")
    assert tools_run(resumed.run_dir) == ECHO_TOOLS
    reasons = [s["reason"] for s in iter_kind(read_events(resumed.run_dir / "ledger.jsonl"), "suspension")]
    assert reasons == ["provider: HTTP 500 x3", "interrupted"]
    assert "stopped" not in saved(resumed.run_dir).notes


CHILD = textwrap.dedent(
    """
    import json, sys
    from pathlib import Path
    from gym_trainfail.agent import load_agent
    from gym_trainfail.cases import load_case
    from gym_trainfail.episode import run_episode

    options = json.loads(sys.argv[1])
    agent = load_agent("openai", **options)
    run_episode(agent, case=load_case(Path(sys.argv[2])), sandbox="bwrap", run_dir=Path(sys.argv[3]),
                agent_options=options)
    """
)


@pytest.fixture
def child_processes() -> Iterator[list[subprocess.Popen[bytes]]]:
    started: list[subprocess.Popen[bytes]] = []
    yield started
    for process in started:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


def test_killed_loop_resumes_without_repeating_device_work(
    echo_case: CaseSpec, episodes: None, tmp_path: Path, child_processes: list[subprocess.Popen[bytes]]
) -> None:
    run_dir = tmp_path / "run"
    # Request 5 carries the run_job result; the server holds it while the loop is killed.
    with FakeOpenAIServer(echo_script(echo_case), faults={5: hang(120)}, api_key=KEY) as server:
        agent_options = json.dumps(options(server, request_timeout_s=120))
        child = subprocess.Popen(
            [sys.executable, "-c", CHILD, agent_options, str(echo_case.root), str(run_dir)],
            start_new_session=True,  # its own process group, killed whole
            stderr=(tmp_path / "child.log").open("wb"),
        )
        child_processes.append(child)
        held = server.wait_for(lambda r: r.number == 5, timeout=120)
        assert held.messages[-1]["role"] == "tool" and held.messages[-1]["content"].startswith("job ran on 2")
        os.killpg(child.pid, signal.SIGKILL)
        child.wait()
        server.release()

        resumed = resume_episode(run_dir, sandbox="bwrap")

    assert (resumed.reward, resumed.reward_status) == (1.0, "graded")
    assert tools_run(run_dir) == ECHO_TOOLS
    events = read_events(run_dir / "ledger.jsonl")
    assert len(list(iter_kind(events, "device"))) == 1
    assert [s["reason"] for s in iter_kind(events, "suspension")] == ["interrupted"]
    first_after = server.requests[5]
    assert first_after.messages[:-1] == held.messages  # the same conversation, run_job result included
    assert first_after.messages[-1]["content"] == prompts.resumed_note(echo_case.workspace_exclude)
    totals = server.usage_totals()
    assert (resumed.summary.input_tokens, resumed.summary.output_tokens) == (totals["input"], totals["output"])
    assert_key_absent(run_dir)


# -- the parts on their own ---------------------------------------------------------------------


def test_everything_the_loop_says_is_neutral() -> None:
    texts = [
        prompts.system_prompt("/workspace"),
        prompts.CONTINUE_PROMPT,
        prompts.resumed_note(["outputs"]),
        omitted_notice(10),
    ]
    assert [BUG_VOCABULARY.findall(text) for text in texts] == [[], [], [], []]


def test_api_key_is_never_an_agent_option(api_key: str) -> None:
    with pytest.raises(TrainFailError) as raised:
        OpenAIAgent(model=MODEL, api_key=KEY)
    assert str(raised.value) == (
        "api_key is not an agent option: agent options are recorded in episode.json. Set OPENAI_API_KEY in "
        "the environment (or name another variable with api_key_env=NAME)"
    )


def test_options_are_checked(api_key: str, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(TrainFailError, match=r"^unknown openai agent option\(s\) \['temprature'\]; the options"):
        OpenAIAgent(model=MODEL, temprature=0.2)
    with pytest.raises(TrainFailError) as raised:
        OpenAIAgent()
    assert str(raised.value) == "the openai agent needs a model: pass --model NAME or set OPENAI_MODEL"
    monkeypatch.delenv("OPENAI_API_KEY")
    with pytest.raises(TrainFailError) as raised:
        OpenAIAgent(model=MODEL)
    assert str(raised.value).startswith("no API key: set OPENAI_API_KEY in the environment")
    assert OpenAIAgent(model=MODEL, base_url="http://127.0.0.1:9/v1").secrets() == ()  # a local server
    assert set(OPTIONS) == set(inspect.signature(OpenAIAgent).parameters) - {"unknown"}


def test_token_counts_are_offline_and_usage_is_read_as_reported() -> None:
    counter = TokenCounter()
    assert counter.method == "tiktoken cl100k_base (offline copy)"
    assert counter.count_text("hello world") == 2
    usage = {"prompt_tokens": 1200, "completion_tokens": 80, "prompt_tokens_details": {"cached_tokens": 900}}
    assert TurnUsage.reported(usage) == TurnUsage(input=1200, output=80, cached_input=900)
    assert TurnUsage.reported({"prompt_tokens": 10, "completion_tokens": 2, "prompt_tokens_details": None}) == (
        TurnUsage(input=10, output=2)
    )
    assert TurnUsage.reported(None) is None


def test_retry_delay_honours_retry_after_and_is_bounded() -> None:
    policy = RetryPolicy(max_retries=3, base_s=1.0, max_s=5.0)
    assert policy.delay(0, 2.5) == 2.5
    assert policy.delay(0, 90.0) == 5.0
    assert 0.5 <= policy.delay(0, None) <= 1.0
    assert policy.delay(10, None) == 5.0


def _conversation(outputs: int, size: int) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = [{"role": "system", "content": "system"}, {"role": "user", "content": "task"}]
    for n in range(outputs):
        arguments = json.dumps({"path": f"f{n}.py", "content": "x = 1\n" * 200})
        messages.append(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {"id": f"c{n}", "type": "function", "function": {"name": "write_file", "arguments": arguments}}
                ],
            }
        )
        messages.append({"role": "tool", "tool_call_id": f"c{n}", "content": "\n".join(["line"] * size)})
    return messages


def test_fit_keeps_pairs_task_and_latest_turn() -> None:
    counter = TokenCounter()
    messages = _conversation(outputs=12, size=400)
    assert fit(messages, ContextPolicy(budget_tokens=10**6), counter) is messages  # fits: untouched
    for budget in (6000, 2500, 900):
        fitted = fit(messages, ContextPolicy(budget_tokens=budget), counter)
        assert counter.messages(fitted) <= budget
        assert fitted[:2] == messages[:2]
        assert (fitted[-2:] == messages[-2:]) is (budget > 900)  # the latest turn is cut only as a last resort
        calls = [c["id"] for m in fitted if m["role"] == "assistant" for c in m["tool_calls"]]
        assert calls == [m["tool_call_id"] for m in fitted if m["role"] == "tool"]
        for m in fitted:
            for c in m.get("tool_calls") or []:
                assert isinstance(json.loads(c["function"]["arguments"]), dict)
    assert len(messages) == 26  # the conversation itself is never changed
    assert fitted[2] == {
        "role": "user",
        "content": "[11 earlier turns (11 tool calls: write_file) omitted to fit the context window]",
    }


def test_replay_answers_pending_calls_from_the_transcript() -> None:
    calls = [{"id": "a", "type": "function", "function": {"name": "submit", "arguments": "{}"}},
             {"id": "b", "type": "function", "function": {"name": "finish", "arguments": "{}"}}]  # fmt: skip
    conversation = Conversation(
        messages=[
            {"role": "system", "content": "s"},
            {"role": "user", "content": "t"},
            {"role": "assistant", "content": None, "tool_calls": calls},
        ],  # fmt: skip
        steps_done=3,
    )
    records = [
        {"index": 3, "tool": "list_files", "arguments": {}, "observation": "old"},
        {"index": 4, "tool": "submit", "arguments": {}, "observation": "revision 1 recorded"},
    ]
    assert replay(conversation, records) == 1
    assert conversation.messages[-1] == {"role": "tool", "tool_call_id": "a", "content": "revision 1 recorded"}
    assert conversation.steps_done == 4
    assert [c["id"] for c in conversation.pending_calls()] == ["b"]
    # A step no checkpointed call explains (a lost checkpoint) is rebuilt as a call and its result.
    lost = Conversation(messages=[{"role": "system", "content": "s"}, {"role": "user", "content": "t"}])
    assert replay(lost, records[:1]) == 1
    assert lost.messages[2]["tool_calls"][0]["function"] == {"name": "list_files", "arguments": "{}"}
    assert lost.messages[3] == {"role": "tool", "tool_call_id": "call_replayed_3", "content": "old"}


def test_checkpoint_is_atomic_and_scrubs_the_key(tmp_path: Path) -> None:
    conversation = Conversation(messages=[{"role": "user", "content": f"the key {KEY} must not be written"}])
    checkpoint.save(tmp_path, conversation, (KEY,))
    assert [p.name for p in (tmp_path / "agent").iterdir()] == ["conversation.json"]
    loaded = checkpoint.load(tmp_path)
    assert loaded is not None and loaded.messages[0]["content"] == "the key [redacted] must not be written"
    assert checkpoint.load(tmp_path / "nowhere") is None
