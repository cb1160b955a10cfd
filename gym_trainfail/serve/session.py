"""One episode per OpenEnv session: a :class:`TrainFailEnv` behind OpenEnv's ``Environment``.

OpenEnv's server makes one :class:`EpisodeSession` per WebSocket connection and runs its calls
on that session's own thread. ``reset`` starts an episode (or, with ``resume=EPISODE_ID``,
continues an interrupted one); ``step`` is ``env.step`` with the observation, reward,
terminated, truncated and info passed through unchanged. The grade reaches the client only as
the reward of the step that ends the episode, exactly as in-process.

When a client disconnects, OpenEnv closes the session: the episode is closed like
``env.close()`` (finish reason ``close``) with its workspace as of its last writing step
checkpointed, so ``reset(resume=EPISODE_ID)`` on any later session continues it. On shutdown
the server closes every open session the same way, after its in-flight step (and that step's
ledger line) completes.

Episode ids are the names of run directories under the server's runs root; a client never
names a host path.
"""

from __future__ import annotations

import json
import logging
import re
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.types import EnvironmentMetadata

from gym_trainfail.cases import CaseSpec
from gym_trainfail.devices import DevicePool
from gym_trainfail.env import TrainFailEnv
from gym_trainfail.errors import TrainFailError
from gym_trainfail.serve.models import TrainFailAction, TrainFailObservation, TrainFailState

log = logging.getLogger(__name__)

#: What an episode id may look like (it names a folder under the runs root).
EPISODE_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")
#: The reset options a client may pass.
RESET_OPTIONS = ("seed", "episode_id", "case", "arm", "resume", "agent")


@dataclass
class ServeConfig:
    """What every session of one server shares: the cases, arms, sandbox, runs root and devices."""

    cases: dict[str, CaseSpec]
    arms: tuple[str, ...]
    sandbox: str
    runs_root: Path
    pool: DevicePool
    profile: str | None = None
    grade_on_end: bool = True
    open: OpenSessions = field(default_factory=lambda: OpenSessions())

    def case(self, case_id: str | None) -> CaseSpec:
        """A served case by id (the only one, when ``case_id`` is ``None`` and one is served)."""
        if case_id is None:
            if len(self.cases) == 1:
                return next(iter(self.cases.values()))
            raise TrainFailError(f"reset needs case=ID; this server serves {', '.join(sorted(self.cases))}")
        try:
            return self.cases[case_id]
        except KeyError:
            raise TrainFailError(
                f"case {case_id!r} is not served here; this server serves {', '.join(sorted(self.cases))}"
            ) from None

    def arm(self, arm: str | None) -> str:
        """A served arm (the first one by default)."""
        if arm is None:
            return self.arms[0]
        if arm not in self.arms:
            raise TrainFailError(f"arm {arm!r} is not served here; this server serves {', '.join(self.arms)}")
        return arm


class OpenSessions:
    """The sessions of one server that hold an open episode (for shutdown)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._sessions: set[EpisodeSession] = set()

    def add(self, session: EpisodeSession) -> None:
        with self._lock:
            self._sessions.add(session)

    def discard(self, session: EpisodeSession) -> None:
        with self._lock:
            self._sessions.discard(session)

    def holder(self, episode_id: str) -> EpisodeSession | None:
        """The session that has ``episode_id`` open, if any."""
        with self._lock:
            return next((s for s in self._sessions if s.episode_id == episode_id), None)

    def __iter__(self) -> Iterator[EpisodeSession]:
        with self._lock:
            return iter(list(self._sessions))

    def close_all(self) -> list[str]:
        """Close every open episode (each after its in-flight step); the ids left resumable."""
        left = []
        for session in self:
            episode = session.episode_id
            if session.close() and episode is not None:
                left.append(episode)
        return left


class EpisodeSession(Environment):  # openenv ships no type information: Environment is Any
    """One OpenEnv session: at most one open episode of a served case."""

    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self, config: ServeConfig) -> None:
        super().__init__()
        self.config = config
        self._env: TrainFailEnv | None = None
        self._episode_id: str | None = None
        self._done = False
        self._steps = 0
        # Steps, resets and closes of one session are serialized (shutdown closes from another thread).
        self._lock = threading.Lock()

    # -- OpenEnv Environment API --------------------------------------------------------------

    def reset(
        self,
        seed: int | None = None,
        episode_id: str | None = None,
        case: str | None = None,
        arm: str | None = None,
        resume: str | None = None,
        agent: str | None = None,
        **unknown: Any,
    ) -> TrainFailObservation:
        """Start an episode of ``case`` (``episode_id`` names it), or ``resume`` an interrupted one."""
        if unknown:
            raise TrainFailError(f"unknown reset option(s) {sorted(unknown)}; reset takes {', '.join(RESET_OPTIONS)}")
        with self._lock:
            self._close_env()
            if resume is not None:
                env, observation, info = self._resume(_episode_id(resume), seed)
            else:
                env, observation, info = self._start(seed, episode_id, case, arm, agent)
            self._env, self._done, self._steps = env, False, int(info.get("step", 0))
            self._episode_id = Path(info["run_dir"]).name
            self.config.open.add(self)
        return TrainFailObservation(text=observation, info=info, reward=None, done=False)

    def step(self, action: TrainFailAction, timeout_s: float | None = None, **_: Any) -> TrainFailObservation:
        """``env.step`` with the call; a bad action is an error observation, never an error frame."""
        with self._lock:
            env = self._env
            if env is None:
                text = "error: no episode is open in this session; call reset() first"
                return TrainFailObservation(text=text, info={"tool": None, "error": True}, reward=0.0)
            payload: str | dict[str, Any]
            if action.invalid is not None:
                payload = json.dumps({"error": action.invalid})  # parse_action refuses it: a recorded bad step
                env_text, reward, terminated, truncated, info = env.step(payload)
                env_text = f"error: {action.invalid}"
            else:
                payload = {"tool": action.tool, "arguments": action.arguments}
                env_text, reward, terminated, truncated, info = env.step(payload)
            self._done = terminated or truncated
            self._steps = int(info.get("step", self._steps))
        return TrainFailObservation(
            text=env_text,
            reward=float(reward),
            done=self._done,
            terminated=terminated,
            truncated=truncated,
            info=info,
        )

    @property
    def state(self) -> TrainFailState:
        env = self._env
        run_dir = env.run_dir if env is not None else None
        return TrainFailState(
            episode_id=self._episode_id,
            step_count=self._steps,
            case=env.case.id if env is not None else None,
            arm=env.arm.name if env is not None else None,
            run_dir=str(run_dir) if run_dir is not None else None,
            done=self._done,
        )

    def get_metadata(self) -> EnvironmentMetadata:
        return EnvironmentMetadata(
            name="gym-trainfail",
            description="distributed-training failure cases: " + ", ".join(sorted(self.config.cases)),
            version="1",
        )

    def close(self) -> bool:
        """Close the open episode, leaving it resumable unless it had ended; True if one was open."""
        with self._lock:
            return self._close_env()

    # -- internals ----------------------------------------------------------------------------

    @property
    def episode_id(self) -> str | None:
        return self._episode_id

    def _close_env(self) -> bool:
        env, self._env = self._env, None
        self.config.open.discard(self)
        if env is None:
            return False
        was_open = not self._done
        env.close()
        if was_open:
            log.warning(
                "episode %s left unfinished; continue it with reset(resume=%r)", self._episode_id, self._episode_id
            )
        return was_open

    def _new_env(self, case: CaseSpec, arm: str) -> TrainFailEnv:
        return TrainFailEnv(
            case=case,
            profile=self.config.profile,
            arm=arm,
            sandbox=self.config.sandbox,
            runs_root=self.config.runs_root,
            grade_on_end=self.config.grade_on_end,
            device_pool=self.config.pool,
        )

    def _start(
        self, seed: int | None, episode_id: str | None, case_id: str | None, arm: str | None, agent: str | None
    ) -> tuple[TrainFailEnv, str, dict[str, Any]]:
        env = self._new_env(self.config.case(case_id), self.config.arm(arm))
        options: dict[str, Any] = {"agent": _agent_name(agent)}
        if episode_id is not None:
            run_dir = self.config.runs_root / _episode_id(episode_id)
            if run_dir.exists():
                raise TrainFailError(
                    f"episode {episode_id!r} exists; resume it with reset(resume=...) or pick a new id"
                )
            options["run_dir"] = run_dir
        try:
            observation, info = env.reset(seed=seed, options=options)
        except BaseException:
            env.close()
            raise
        return env, observation, info

    def _resume(self, episode_id: str, seed: int | None) -> tuple[TrainFailEnv, str, dict[str, Any]]:
        holder = self.config.open.holder(episode_id)
        if holder is not None and holder is not self:
            raise TrainFailError(f"episode {episode_id!r} is open in another session; close that session first")
        run_dir = self.config.runs_root / episode_id
        try:
            meta = json.loads((run_dir / "episode.json").read_text())
        except (OSError, json.JSONDecodeError):
            raise TrainFailError(f"no resumable episode {episode_id!r} on this server") from None
        if not isinstance(meta, dict):
            raise TrainFailError(f"episode {episode_id!r} has an unreadable episode.json")
        env = self._new_env(self.config.case(str(meta.get("case"))), self.config.arm(str(meta.get("arm"))))
        try:
            observation, info = env.reset(seed=seed, options={"resume": run_dir})
        except BaseException:
            env.close()
            raise
        return env, observation, info


def _episode_id(value: object) -> str:
    if not isinstance(value, str) or not EPISODE_ID.fullmatch(value):
        raise TrainFailError("an episode id is 1-128 letters, digits, '.', '_' or '-', starting with a letter or digit")
    return value


def _agent_name(value: object) -> str:
    if value is None:
        return "openenv"
    if not isinstance(value, str) or not EPISODE_ID.fullmatch(value):
        raise TrainFailError("agent must be a short name (letters, digits, '.', '_', '-')")
    return value
