"""Cases as Inspect AI tasks: Inspect's ``mockllm`` and the fake OpenAI server as the model.

Episodes run on the echo case with real bubblewrap; the sample's score is the private grade,
usage lands in our ledger exactly, and the run directory grades like any episode's.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from inspect_ai import eval as inspect_eval
from inspect_ai.log import read_eval_log
from inspect_ai.model import ContentReasoning, ContentText, ModelOutput, ModelUsage, get_model

from gym_trainfail.cases import CaseSpec
from gym_trainfail.episode import grade_run
from gym_trainfail.inspect import task_name, trainfail_task
from gym_trainfail.ledger import read_events, summarize
from gym_trainfail.registry import default_registry
from gym_trainfail.runtimes import Runtime
from tests.conftest import ECHO_CASE
from trainfail_agents.fake_openai import FakeOpenAIServer, call, turn
from trainfail_agents.scripted import patched_files

REPO = Path(__file__).resolve().parents[1]
KEY = "sk-fake-inspect-key-9a8b7c6d5e4f"
MOCK = "mockllm/model"


def fixed_report(case: CaseSpec) -> str:
    text = patched_files(case.workspace_dir, case.reference_patch)["report.py"]
    assert text is not None
    return text


def tool_call(name: str, arguments: dict[str, Any], usage: tuple[int, int, int]) -> ModelOutput:
    """A mockllm turn calling one tool, with explicit usage: full-rate input, output, cache reads."""
    output = ModelOutput.for_tool_call(MOCK, name, arguments)
    output.message.content = ""  # no text: only the call
    full, out, cached = usage
    output.usage = ModelUsage(input_tokens=full, output_tokens=out, input_tokens_cache_read=cached, total_tokens=0)
    return output


def test_task_names_cover_every_registered_case() -> None:
    names = {task_name(case) for case in default_registry()}
    assert "ddp_token_average" in names and len(names) == len(default_registry())
    assert all(name.isidentifier() and name == name.lower() for name in names)


def test_mockllm_repairs_the_echo_case_to_score_1(
    echo_case: CaseSpec, runtime: Runtime, bwrap_usable: None, tmp_path: Path
) -> None:
    outputs = [
        tool_call("write_file", {"path": "report.py", "content": fixed_report(echo_case)}, (100, 7, 0)),
        tool_call("submit", {}, (150, 5, 100)),
        tool_call("finish", {"summary": "the report prints the documented value"}, (120, 9, 300)),
    ]
    outputs[0].message.content = [ContentReasoning(reasoning="the README says 42"), ContentText(text="fixing it")]
    task = trainfail_task(echo_case, sandbox="bwrap", runs=tmp_path / "runs")
    [log] = inspect_eval(task, model=get_model(MOCK, custom_outputs=outputs), log_dir=str(tmp_path / "logs"),
                         display="none")  # fmt: skip
    assert log.status == "success", log.error
    assert log.samples is not None
    [sample] = log.samples
    score = sample.scores["trainfail_grade"] if sample.scores else None
    assert score is not None and score.value == 1.0 and score.explanation == "graded"
    run_dir = Path(score.metadata["run_dir"] if score.metadata else "")
    events = read_events(run_dir / "ledger.jsonl")
    # Input is the whole prompt (full-rate + cache reads), cached input reported beside it and counted once.
    tokens = [(e["input"], e["output"], e["cached_input"]) for e in events if e["event"] == "tokens"]
    assert tokens == [(100, 7, 0), (250, 5, 100), (420, 9, 300)]
    assert summarize(events).total_tokens == 100 + 250 + 420 + 7 + 5 + 9
    messages = [(e["kind"], e["text"]) for e in events if e["event"] == "message"]
    assert messages == [("reasoning", "the README says 42"), ("message", "fixing it")]
    assert [e["tool"] for e in events if e["event"] == "step"] == ["write_file", "submit", "finish"]
    # The model saw tool output only: no grade, status or scenario in any tool result.
    tool_results = [m.text for m in sample.messages if m.role == "tool"]
    assert tool_results[1:] == ["revision 1 recorded", "episode finished; revision 1 is the final revision"]
    meta = json.loads((run_dir / "episode.json").read_text())
    assert (meta["agent"], meta["reward"], meta["final_revision"]) == ("inspect", 1.0, 1)
    first = grade_run(run_dir, sandbox="bwrap").first_valid
    assert first is not None and first.revision == 1


@pytest.mark.slow  # two CLI processes (inspect eval, trainfail grade): about 25 s on a loaded 2-core machine
def test_fake_openai_model_through_inspect_eval_and_trainfail_grade(
    echo_case: CaseSpec, runtime: Runtime, bwrap_usable: None, tmp_path: Path
) -> None:
    script = [
        turn(call("list_files"), content="looking around"),
        turn(call("write_file", path="report.py", content=fixed_report(echo_case))),
        turn(call("submit")),
        turn(call("finish", summary="done")),
    ]
    logs, runs = tmp_path / "logs", tmp_path / "runs"
    with FakeOpenAIServer(script, api_key=KEY) as server:
        env = {**os.environ, "FAKE_BASE_URL": server.url, "FAKE_API_KEY": KEY, "INSPECT_LOG_DIR": str(logs)}
        command = [sys.executable, "-m", "inspect_ai", "eval", "gym_trainfail/inspect/tasks.py@trainfail",
                   "-T", f"case={ECHO_CASE}", "-T", "sandbox=bwrap", "-T", f"runs={runs}",
                   "--model", "openai-api/fake/fake-model", "--display", "none"]  # fmt: skip
        done = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr[-3000:]
        totals = server.usage_totals()
    [log_file] = logs.glob("*.eval")
    log = read_eval_log(str(log_file))
    assert log.status == "success" and log.samples is not None
    score = log.samples[0].scores["trainfail_grade"] if log.samples[0].scores else None
    assert score is not None and score.value == 1.0
    [run_dir] = runs.iterdir()
    events = read_events(run_dir / "ledger.jsonl")
    recorded = {k: sum(e[key] for e in events if e["event"] == "tokens")
                for k, key in (("input", "input"), ("output", "output"), ("cached_input", "cached_input"))}  # fmt: skip
    assert recorded == totals and totals["cached_input"] > 0
    assert KEY.encode() not in b"".join(p.read_bytes() for p in run_dir.rglob("*.json*") if p.is_file())
    graded = subprocess.run([sys.executable, "-m", "gym_trainfail.cli", "grade", str(run_dir), "--sandbox", "bwrap",
                             "--json"], cwd=REPO, capture_output=True, text=True, timeout=300)  # fmt: skip
    assert graded.returncode == 0, graded.stderr[-2000:]
    assert json.loads(graded.stdout)["first_valid_revision"] == 1


def test_named_case_tasks_resolve_by_file_and_by_entry_point(
    runtime: Runtime, bwrap_usable: None, tmp_path: Path
) -> None:
    model = get_model(MOCK, custom_outputs=[tool_call("finish", {}, (10, 1, 0))])
    options = {"runs": str(tmp_path / "runs"), "sandbox": "bwrap"}
    spec = f"{REPO}/gym_trainfail/inspect/tasks.py@ddp_token_average"
    [log] = inspect_eval(spec, model=model, display="none", log_dir=str(tmp_path / "logs"), task_args=options)
    assert log.eval.task == "ddp_token_average" and log.status == "success", log.error
    assert log.samples is not None
    score = log.samples[0].scores["trainfail_grade"] if log.samples[0].scores else None
    assert score is not None and score.value == 0.0 and score.explanation == "no-revision"
    # The registry entry point, as a user runs it: the inspect command, outside the clone (there,
    # gym_trainfail/ddp_token_average names a folder), no sample run.
    inspect = Path(sys.executable).with_name("inspect")
    command = [str(inspect), "eval", "gym_trainfail/ddp_token_average", "--model", MOCK, "--limit", "0",
               "--log-dir", str(tmp_path / "ep-logs"), "--display", "none"]  # fmt: skip
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    [entry_log] = (tmp_path / "ep-logs").glob("*.eval")
    assert read_eval_log(str(entry_log), header_only=True).eval.task == "ddp_token_average"


def test_an_inspect_limit_ends_the_episode_graded(
    echo_case: CaseSpec, runtime: Runtime, bwrap_usable: None, tmp_path: Path
) -> None:
    outputs = [tool_call("list_files", {}, (10, 1, 0)) for _ in range(5)]
    task = trainfail_task(echo_case, sandbox="bwrap", runs=tmp_path / "runs")
    model = get_model(MOCK, custom_outputs=outputs)
    [log] = inspect_eval(task, model=model, log_dir=str(tmp_path / "logs"), display="none", message_limit=4)
    assert log.samples is not None
    [sample] = log.samples
    assert sample.limit is not None and sample.limit.type == "message"
    score = sample.scores["trainfail_grade"] if sample.scores else None
    assert score is not None and score.value == 0.0 and score.explanation == "no-revision"
    run_dir = Path(score.metadata["run_dir"] if score.metadata else "")
    finish = [e for e in read_events(run_dir / "ledger.jsonl") if e["event"] == "finish"]
    assert [e["reason"] for e in finish] == ["finish"]  # ended by the loop, not left open
