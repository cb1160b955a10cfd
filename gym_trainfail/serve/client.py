"""``TrainFailClient``: OpenEnv's :class:`EnvClient` typed for ``trainfail serve``.

    from gym_trainfail.serve import TrainFailAction, TrainFailClient

    with TrainFailClient(base_url="http://127.0.0.1:8000", token=TOKEN).sync() as env:
        result = env.reset(case="TrainFail/DDPTokenAverage-v0")
        result = env.step(TrainFailAction(tool="list_files"))
        print(result.observation.text, result.reward, result.done)

Any OpenEnv client works (the wire format is OpenEnv's); this one only knows the types.
"""

from __future__ import annotations

import json
from typing import Any, cast

from openenv.core.client_types import StepResult
from openenv.core.env_client import EnvClient

from gym_trainfail.serve.models import TrainFailAction, TrainFailObservation, TrainFailState
from gym_trainfail.tools import MAX_JOB_TIMEOUT_S

#: How long a step may take before the client gives up: the longest job, plus time to grade.
STEP_TIMEOUT_S = MAX_JOB_TIMEOUT_S + 1800


class TrainFailClient(EnvClient):  # openenv ships no type information: EnvClient is Any
    """A session on a ``trainfail serve`` server (one episode at a time)."""

    def __init__(self, base_url: str, token: str, **options: Any) -> None:
        """``options`` are :class:`EnvClient`'s. ``message_timeout_s`` defaults to
        :data:`STEP_TIMEOUT_S` rather than OpenEnv's 60 s: a ``run_job`` step may run for an
        hour and the step that ends an episode waits for its grading."""
        headers = {"Authorization": f"Bearer {token}", **options.pop("headers", {})}
        options.setdefault("message_timeout_s", STEP_TIMEOUT_S)
        super().__init__(base_url=base_url, headers=headers, **options)

    async def _send(self, message: dict[str, Any]) -> None:
        """As OpenEnv's, but as UTF-8 text: a non-ASCII character costs 1-4 bytes of the frame, not
        a 6- or 12-byte ``\\u`` escape, so every action within the size limit fits in a frame."""
        await self._ensure_connected()
        try:
            await self._ws.send(json.dumps(message, ensure_ascii=False))
        except UnicodeEncodeError:  # a lone surrogate has no UTF-8 form: escaped, as OpenEnv sends it
            await self._ws.send(json.dumps(message))

    def _step_payload(self, action: TrainFailAction) -> dict[str, Any]:
        return cast(dict[str, Any], action.model_dump(exclude={"invalid", "metadata"}))

    def _parse_result(self, payload: dict[str, Any]) -> StepResult[TrainFailObservation]:
        observation = TrainFailObservation.model_validate(
            {**payload.get("observation", {}), "reward": payload.get("reward"), "done": payload.get("done", False)}
        )
        return StepResult(observation=observation, reward=payload.get("reward"), done=bool(payload.get("done")))

    def _parse_state(self, payload: dict[str, Any]) -> TrainFailState:
        return cast(TrainFailState, TrainFailState.model_validate(payload))
