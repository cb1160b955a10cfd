"""One episode per WebSocket session: a :class:`TrainFailEnv` behind OpenEnv's ``Environment``.

The server makes one :class:`EpisodeSession` per WebSocket connection and runs its calls on that
session's own thread. ``reset`` starts an episode (or, with ``resume=EPISODE_ID``, continues an
interrupted one); ``step`` is ``env.step`` with the observation, reward, terminated, truncated
and info passed through unchanged. The grade reaches the client only as the reward of the step
that ends the episode, exactly as in-process.

**One holder per episode.** A session claims the episode's run directory
(:mod:`gym_trainfail.serve.claims`) before the env touches it and lets go after the env closed
it; a second claimant is told ``episode X is open in another session``.

When a client disconnects, the server closes the session: the episode is closed like
``env.close()`` (finish reason ``close``) with its workspace as of its last writing step
checkpointed, so ``reset(resume=EPISODE_ID)`` on any later session continues it. On the first
SIGTERM/SIGINT the server closes every session the same way, after its in-flight step; on the
second, :meth:`Sessions.halt` stops at once: idle sessions are closed, a session whose call is
still running is recorded as interrupted in its ledger (:meth:`EpisodeSession.interrupt`) and
the process exits, killing that call's sandbox processes.

Episode ids are the names of run directories under the server's runs root; a client never
names a host path.
"""

from __future__ import annotations

import json
import logging
import re
import secrets
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.types import EnvironmentMetadata

from gym_trainfail.cases import CaseSpec
from gym_trainfail.devices import DevicePool
from gym_trainfail.env import TrainFailEnv
from gym_trainfail.errors import TrainFailError
from gym_trainfail.ledger import Ledger, read_events
from gym_trainfail.serve.claims import EpisodeClaim, claim_existing, claim_new
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

    def case(self, case_id: str | None) -> CaseSpec:
        """A served case by id (the only one, when ``case_id`` is ``None`` and one is served)."""
        if case_id is None:
            if len(self.cases) == 1:
                return next(iter(self.cases.values()))
            raise TrainFailError(f"reset needs case=ID; this server serves {', '.join(sorted(self.cases))}")
        if not isinstance(case_id, str):
            raise TrainFailError(f"case must be a case id, e.g. {next(iter(sorted(self.cases)))!r}")
        try:
            return self.cases[case_id]
        except KeyError:
            raise TrainFailError(
                f"case {case_id[:200]!r} is not served here; this server serves {', '.join(sorted(self.cases))}"
            ) from None

    def arm(self, arm: str | None) -> str:
        """A served arm (the first one by default)."""
        if arm is None:
            return self.arms[0]
        if not isinstance(arm, str) or arm not in self.arms:
            served = ", ".join(self.arms)
            raise TrainFailError(f"arm {str(arm)[:100]!r} is not served here; this server serves {served}")
        return arm


class ServerHalted(TrainFailError):
    """The server is stopping at once (a second signal): no new call starts."""


class EpisodeSession(Environment):  # openenv ships no type information: Environment is Any
    """One WebSocket session: at most one open episode of a served case."""

    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self, config: ServeConfig, halted: threading.Event | None = None) -> None:
        super().__init__()
        self.config = config
        self._halted = halted or threading.Event()
        self._env: TrainFailEnv | None = None
        self._claim: EpisodeClaim | None = None
        self._episode_id: str | None = None
        self._done = False
        self._steps = 0
        #: The call running now ("reset", "step 4 (shell)", "close"), for an interruption record.
        self._call: str | None = None
        # Calls of one session are serialized (shutdown closes from another thread).
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
            names = sorted(str(k)[:40] for k in unknown)[:10]
            raise TrainFailError(f"unknown reset option(s) {names}; reset takes {', '.join(RESET_OPTIONS)}")
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)):
            raise TrainFailError("seed must be an integer")
        with self._lock:
            self._refuse_if_halted()
            self._close_env()
            self._call = "reset"
            try:
                if resume is not None:
                    env, observation, info = self._resume(_episode_id(resume), seed)
                else:
                    env, observation, info = self._start(seed, episode_id, case, arm, agent)
            finally:
                self._call = None
            self._env, self._done, self._steps = env, False, int(info.get("step", 0))
            self._episode_id = Path(info["run_dir"]).name
        return TrainFailObservation(text=observation, info=info, reward=None, done=False)

    def step(self, action: TrainFailAction, timeout_s: float | None = None, **_: Any) -> TrainFailObservation:
        """``env.step`` with the call; a bad action is an error observation, never an error frame."""
        with self._lock:
            self._refuse_if_halted()
            env = self._env
            if env is None:
                text = "error: no episode is open in this session; call reset() first"
                return TrainFailObservation(text=text, info={"tool": None, "error": True}, reward=0.0)
            payload: str | dict[str, Any]
            # Only a known tool name reaches the label (it may go into the ledger as an interruption).
            known = action.invalid is None and any(s["function"]["name"] == action.tool for s in env.tool_specs)
            self._call = f"step {self._steps + 1} ({action.tool if known else 'invalid action'})"
            try:
                if action.invalid is not None:
                    payload = json.dumps({"error": action.invalid})  # parse_action refuses it: a recorded bad step
                    env_text, reward, terminated, truncated, info = env.step(payload)
                    env_text = f"error: {action.invalid}"
                else:
                    # As a dict, exactly as in-process: the env's own size rule and parsing answer it.
                    payload = {"tool": action.tool, "arguments": action.arguments}
                    env_text, reward, terminated, truncated, info = env.step(payload)
            finally:
                self._call = None
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
        return metadata(self.config)

    def close(self) -> bool:
        """Close the open episode, leaving it resumable unless it had ended; True if one was open."""
        with self._lock:
            return self._close_env()

    # -- shutdown -----------------------------------------------------------------------------

    @property
    def episode_id(self) -> str | None:
        return self._episode_id

    @property
    def busy(self) -> bool:
        """Whether a call (reset, step, close) is running in this session now."""
        return self._lock.locked()

    def try_close(self) -> bool | None:
        """Close the session if no call is running (True/False as :meth:`close`); None if one is."""
        if not self._lock.acquire(blocking=False):
            return None
        try:
            return self._close_env()
        finally:
            self._lock.release()

    def interrupt(self, cause: str) -> str | None:
        """Record, as the host, that the running call was stopped (``cause``: e.g. ``second SIGTERM``).

        The episode stays as of its last completed step: its workspace checkpoint is that step's,
        the stopped call never gets a step line, and the ledger gets a ``finish`` with reason
        ``interrupted`` (resumable) or, when the episode had already finished (its final grading
        was running), an ``interrupted`` event. Returns the episode id, or None if the session held
        no episode with a ledger yet. Called while the call's thread is still running: the process
        exits right after, so that thread writes nothing more."""
        claim, call = self._claim, self._call
        if claim is None:
            return None
        ledger_path = claim.run_dir / "ledger.jsonl"
        if not ledger_path.is_file():
            return None  # a reset that never started its episode: nothing to resume
        events = read_events(ledger_path)
        starts = [i for i, e in enumerate(events) if e.get("event") in ("reset", "resume")]
        current = events[starts[-1] :] if starts else events
        finished = any(e.get("event") == "finish" for e in current)
        submits = [e.get("revision") for e in events if e.get("event") == "submit"]
        detail = {"call": call or "unknown", "cause": cause}
        ledger = Ledger(ledger_path)
        try:
            if finished:
                ledger.append("interrupted", **detail)
            else:
                ledger.append(
                    "finish",
                    reason="interrupted",
                    summary="",
                    final_revision=submits[-1] if submits else None,
                    interrupted=detail,
                )
        finally:
            ledger.close()
        return claim.episode_id

    # -- internals ----------------------------------------------------------------------------

    def _refuse_if_halted(self) -> None:
        if self._halted.is_set():
            raise ServerHalted("the server is shutting down; reconnect when it is back and resume the episode")

    def _close_env(self) -> bool:
        env, self._env = self._env, None
        claim, self._claim = self._claim, None
        try:
            if env is None:
                return False
            was_open = not self._done
            if claim is not None:
                claim.closing()  # a resume of this episode from another session waits for the close
            self._call = "close"
            try:
                env.close()
            finally:
                self._call = None
            if was_open:
                log.warning(
                    "episode %s left unfinished; continue it with reset(resume=%r)", self._episode_id, self._episode_id
                )
            return was_open
        finally:
            if claim is not None:
                claim.release()  # after env.close(): the next holder finds the episode closed

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
        case, arm_name = self.config.case(case_id), self.config.arm(arm)
        options: dict[str, Any] = {"agent": _agent_name(agent)}
        if episode_id is not None:
            claim = claim_new(self.config.runs_root, _episode_id(episode_id))
        else:
            claim = self._claim_fresh(case, arm_name)
        self._claim = claim
        options["run_dir"] = claim.run_dir
        env: TrainFailEnv | None = None
        try:
            env = self._new_env(case, arm_name)
            observation, info = env.reset(seed=seed, options=options)
        except BaseException:
            self._claim = None
            try:
                if env is not None:
                    env.close()
            finally:
                claim.release()
            raise
        return env, observation, info

    def _claim_fresh(self, case: CaseSpec, arm: str) -> EpisodeClaim:
        """A new run directory named as the env names one (time, case, arm, random suffix)."""
        name = re.sub(r"[^A-Za-z0-9._-]", "-", f"{case.name}-{arm}")[:80]
        for _ in range(8):
            episode_id = f"{time.strftime('%Y%m%d-%H%M%S')}-{name}-{secrets.token_hex(3)}"
            try:
                return claim_new(self.config.runs_root, episode_id)
            except TrainFailError:
                if not (self.config.runs_root / episode_id).exists():
                    raise
        raise TrainFailError("could not pick a new episode id; pass episode_id=...")

    def _resume(self, episode_id: str, seed: int | None) -> tuple[TrainFailEnv, str, dict[str, Any]]:
        claim = claim_existing(self.config.runs_root, episode_id)  # before anything reads the episode
        self._claim = claim
        env: TrainFailEnv | None = None
        try:
            try:
                meta = json.loads((claim.run_dir / "episode.json").read_text())
            except (OSError, json.JSONDecodeError, UnicodeDecodeError):
                raise TrainFailError(f"no resumable episode {episode_id!r} on this server") from None
            if not isinstance(meta, dict):
                raise TrainFailError(f"episode {episode_id!r} has an unreadable episode.json")
            env = self._new_env(self.config.case(str(meta.get("case"))), self.config.arm(str(meta.get("arm"))))
            observation, info = env.reset(seed=seed, options={"resume": claim.run_dir})
        except BaseException:
            self._claim = None
            try:
                if env is not None:
                    env.close()
            finally:
                claim.release()
            raise
        return env, observation, info


def metadata(config: ServeConfig) -> EnvironmentMetadata:
    """What ``/metadata`` answers."""
    return EnvironmentMetadata(
        name="gym-trainfail",
        description="distributed-training failure cases: " + ", ".join(sorted(config.cases)),
        version="1",
    )


class CapacityError(TrainFailError):
    """Every session slot is taken."""

    def __init__(self, active: int, limit: int) -> None:
        super().__init__(f"the server has {active} of {limit} sessions open (--max-sessions); try again later")
        self.active, self.limit = active, limit


class Sessions:
    """The live sessions of one server (one per WebSocket connection): the session bound and shutdown."""

    def __init__(self, config: ServeConfig, limit: int) -> None:
        if limit < 1:
            raise ValueError("max_sessions must be at least 1")
        self.config = config
        self.limit = limit
        #: Set by :meth:`halt`: no new call starts in any session.
        self.halted = threading.Event()
        self._lock = threading.Lock()
        # Sessions holding a slot (their connection is open), and every session not yet closed.
        self._slots: set[EpisodeSession] = set()
        self._live: set[EpisodeSession] = set()

    def open(self) -> EpisodeSession:
        """A new session, or :class:`CapacityError` when ``limit`` connections hold one."""
        with self._lock:
            if len(self._slots) >= self.limit:
                raise CapacityError(len(self._slots), self.limit)
            session = EpisodeSession(self.config, self.halted)
            self._slots.add(session)
            self._live.add(session)
            return session

    def release(self, session: EpisodeSession) -> None:
        """The session's connection is gone: its slot is free (its episode may still be closing)."""
        with self._lock:
            self._slots.discard(session)

    def discard(self, session: EpisodeSession) -> None:
        """The session is closed."""
        with self._lock:
            self._slots.discard(session)
            self._live.discard(session)

    def __len__(self) -> int:
        """Slots in use: sessions whose connection is open."""
        with self._lock:
            return len(self._slots)

    def __iter__(self) -> Iterator[EpisodeSession]:
        """Every session not yet closed (for shutdown)."""
        with self._lock:
            return iter(list(self._live))

    def close_all(self) -> list[str]:
        """Close every open episode (each after its in-flight call); the ids left resumable."""
        left = []
        for session in self:
            episode = session.episode_id
            if session.close() and episode is not None:
                left.append(episode)
        return left

    def halt(self, cause: str, grace_s: float) -> list[str]:
        """Stop now: no call starts any more; idle sessions are closed (within ``grace_s``); each
        session whose call is still running is recorded as interrupted. Returns the ids of the
        interrupted episodes; the caller ends the process (and the calls' sandboxes) right after."""
        self.halted.set()
        deadline = time.monotonic() + grace_s
        outcomes: dict[EpisodeSession, list[bool | None]] = {}
        closers = []
        for session in self:
            outcome: list[bool | None] = []
            outcomes[session] = outcome
            closer = threading.Thread(target=lambda s=session, o=outcome: o.append(s.try_close()), daemon=True)
            closer.start()
            closers.append(closer)
        for closer in closers:
            closer.join(max(0.0, deadline - time.monotonic()))
        # A session whose call is running (try_close found it locked), or whose close outlived the grace.
        busy = [s for s, outcome in outcomes.items() if not outcome or outcome[0] is None]
        interrupted = []
        for session in busy:
            try:
                episode = session.interrupt(cause)
            except Exception:  # noqa: BLE001 - one unreadable ledger must not stop the exit
                log.exception("could not record the interruption of a session")
                continue
            if episode is not None:
                interrupted.append(episode)
        return interrupted


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
