"""A case as an Inspect AI task: the case's tools, our sandbox, our ledger, the private grade.

Each sample is one episode of a :class:`~gym_trainfail.env.TrainFailEnv` (its own bwrap or
Docker sandbox, never Inspect's sandboxes). The solver is a tool-calling loop over Inspect's
model API: every tool call is one ``env.step``, every model turn's usage goes to the episode
ledger (``input`` is the whole prompt, cached input included and also reported as
``cached_input``, so cached tokens count once), and what the model says is recorded as
messages for the diagnosis milestones. When the loop ends (the model finishes, stops calling
tools, or hits an Inspect limit) the episode is finished; its reward is the private grade of
the last revision, computed outside the sandbox exactly as in-process, and the scorer reports
it. The run directory is a normal episode's, so ``trainfail grade RUN_DIR`` and the batch
leaderboard read it.
"""

from __future__ import annotations

import asyncio
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from inspect_ai import Task
from inspect_ai.dataset import Sample
from inspect_ai.model import (
    ChatMessageUser,
    ContentReasoning,
    Model,
    ModelOutput,
    execute_tools,
    get_model,
)
from inspect_ai.scorer import Score, Scorer, Target, mean, scorer
from inspect_ai.solver import Generate, Solver, TaskState, solver
from inspect_ai.tool import Tool, ToolDef, ToolParams
from inspect_ai.util import LimitExceededError

from gym_trainfail.cases import CASE_ID_RE, CaseSpec
from gym_trainfail.env import TrainFailEnv
from gym_trainfail.files import write_json
from gym_trainfail.ledger import read_events, summarize
from gym_trainfail.registry import resolve_case

#: The agent name recorded in the episode.
AGENT_NAME = "inspect"
#: Where the solver leaves the episode's outcome for the scorer (the sample's store).
STORE_KEY = "trainfail"
CONTINUE_PROMPT = (
    "Continue by calling one of the tools. When you are done, call submit to record your revision, then finish."
)


def task_name(case: CaseSpec) -> str:
    """The Inspect task name of a case: ``TrainFail/DDPTokenAverage-v1`` → ``ddp_token_average``.
    The version is left out (a registry holds one version of a case; the log's task arguments
    and sample metadata carry the full id), so a task's name survives a case's version bump."""
    match = CASE_ID_RE.match(case.id)
    assert match is not None  # validated when the case was loaded
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "_", match["name"]).lower()


def trainfail_task(
    case: str | CaseSpec,
    *,
    arm: str = "control",
    sandbox: str = "auto",
    runs: str | Path | None = None,
    profile: str | None = None,
    max_idle_turns: int = 3,
) -> Task:
    """The Inspect task for ``case`` (an id or a case folder): one sample, one episode per epoch."""
    spec = resolve_case(case) if isinstance(case, str) else case
    spec = spec.with_profile(profile)
    sample = Sample(input=spec.prompt, id=task_name(spec), metadata={"case": spec.id, "arm": arm})
    return Task(
        dataset=[sample],
        solver=trainfail_agent(
            case=str(spec.root),
            arm=arm,
            sandbox=sandbox,
            runs=str(runs) if runs is not None else None,
            profile=profile,
            max_idle_turns=max_idle_turns,
        ),
        scorer=trainfail_grade(),
        name=task_name(spec),
        metadata={"case": spec.id, "arm": arm, "profile": spec.profile},
    )


@dataclass
class _Episode:
    """One episode driven from Inspect's event loop; env calls run on a worker thread."""

    env: TrainFailEnv
    done: bool = False
    reward: float = 0.0

    async def step(self, tool: str, arguments: dict[str, Any]) -> str:
        observation, reward, terminated, truncated, _ = await asyncio.to_thread(
            self.env.step, {"tool": tool, "arguments": arguments}
        )
        if terminated or truncated:
            self.done, self.reward = True, float(reward)
        return observation

    def tools(self) -> list[Tool]:
        """The case's tools (the env's specs, as Inspect tool definitions)."""
        return [self._tool(spec["function"]) for spec in self.env.tool_specs]

    def _tool(self, function: dict[str, Any]) -> Tool:
        name = str(function["name"])

        async def call(**kwargs: Any) -> str:
            return await self.step(name, kwargs)

        # max_output=0: the env already bounds tool output to its stated limit.
        return ToolDef(
            call,
            name=name,
            description=str(function["description"]),
            parameters=_parameters(function["parameters"]),
            max_output=0,
        ).as_tool()

    def record_turn(self, output: ModelOutput) -> None:
        """The turn's exact usage (prompt = full-rate + cache reads + cache writes) and its text."""
        usage = output.usage
        if usage is not None:
            cached = usage.input_tokens_cache_read or 0
            prompt = usage.input_tokens + cached + (usage.input_tokens_cache_write or 0)
            self.env.record_usage(prompt, usage.output_tokens, cached)
        message = output.message
        if isinstance(message.content, list):
            for part in message.content:
                if isinstance(part, ContentReasoning) and not part.redacted and part.reasoning.strip():
                    self.env.record_message(part.reasoning, kind="reasoning")
        if message.text.strip():
            self.env.record_message(message.text)


def _parameters(schema: dict[str, Any]) -> ToolParams:
    """The tool's JSON schema; Inspect wants a description on every parameter, so the name stands
    in where the schema has none."""
    properties = {
        name: {"description": name.replace("_", " "), **prop} for name, prop in schema.get("properties", {}).items()
    }
    return ToolParams.model_validate({**schema, "properties": properties})


@solver
def trainfail_agent(
    case: str,
    arm: str = "control",
    sandbox: str = "auto",
    runs: str | None = None,
    profile: str | None = None,
    max_idle_turns: int = 3,
) -> Solver:
    """Play one episode of ``case`` with the task's model, through the case's tools."""

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        spec = resolve_case(case).with_profile(profile)
        env = TrainFailEnv(case=spec, arm=arm, sandbox=sandbox, runs_root=runs)
        model = get_model()
        options = {"agent": AGENT_NAME, "agent_options": {"model": str(model), "max_idle_turns": max_idle_turns}}
        observation, info = await asyncio.to_thread(env.reset, seed=state.epoch, options=options)
        episode = _Episode(env)
        run_dir = Path(info["run_dir"])
        state.store.set(STORE_KEY, {"run_dir": str(run_dir), "reward": 0.0, "reward_status": "not-ended"})
        state.messages = [ChatMessageUser(content=observation)]
        finished = False
        try:
            await _loop(state, model, episode, max_idle_turns)
            finished = True
        except LimitExceededError:
            finished = True  # an Inspect limit ends the episode, as a budget does in-process
            raise
        finally:
            await asyncio.to_thread(_end, episode, state, finished)
        return state

    return solve


async def _loop(state: TaskState, model: Model, episode: _Episode, max_idle_turns: int) -> None:
    tools = episode.tools()
    idle = 0
    while not episode.done:
        output = await model.generate(state.messages, tools)
        state.output = output
        state.messages.append(output.message)
        await asyncio.to_thread(episode.record_turn, output)
        if output.message.tool_calls:
            idle = 0
            result = await execute_tools(state.messages, tools)
            state.messages.extend(result.messages)
            continue
        idle += 1
        if idle >= max_idle_turns:
            return
        state.messages.append(ChatMessageUser(content=CONTINUE_PROMPT))


def _end(episode: _Episode, state: TaskState, finished: bool) -> None:
    """Finish the episode (graded, when the loop ended normally) or leave it resumable; close it;
    record the outcome in ``episode.json`` as ``trainfail run`` does, and in the sample's store."""
    env = episode.env
    run_dir = env.run_dir
    try:
        if finished and not episode.done:
            _, reward, _, _, _ = env.step({"tool": "finish", "arguments": {"summary": "the Inspect loop ended"}})
            episode.done, episode.reward = True, float(reward)
        status, final = env.reward_status, env.final_revision
    finally:
        env.close()
    if run_dir is None:
        return
    summary = summarize(read_events(run_dir / "ledger.jsonl"))
    meta = json.loads((run_dir / "episode.json").read_text())
    meta.update(agent=AGENT_NAME, reward=episode.reward, reward_status=status, final_revision=final,
                summary=summary.to_dict())  # fmt: skip
    write_json(run_dir / "episode.json", meta)
    outcome = {"run_dir": str(run_dir), "reward": episode.reward, "reward_status": status, "final_revision": final}
    state.store.set(STORE_KEY, outcome)


@scorer(metrics=[mean()])
def trainfail_grade() -> Scorer:
    """The private grade of the episode's last revision (1.0 passes every scenario, else 0.0)."""

    async def score(state: TaskState, target: Target) -> Score:
        outcome = state.store.get(STORE_KEY)
        if not isinstance(outcome, dict):
            return Score(value=0.0, explanation="no episode ran")
        return Score(
            value=float(outcome.get("reward", 0.0)),
            answer=f"revision {outcome.get('final_revision')}",
            explanation=str(outcome.get("reward_status")),
            metadata={"run_dir": outcome.get("run_dir")},
        )

    return score
