"""``TrainFailEnv``: one failure case as a Gymnasium environment.

Observations and actions are text. An action is one tool call (JSON text or a dict); a bad
or failing call comes back as an error observation and the episode goes on. ``submit``
records a revision and says only its number; the reward, computed privately from the last
revision when the episode ends, is the only channel through which a grade reaches the caller.

The env keeps the Gymnasium lifecycle (reset, resume, step bookkeeping, checkpoints, budgets,
sandbox recovery, the reward); what each tool does is :mod:`gym_trainfail.tool_handlers`.
"""

from __future__ import annotations

import contextlib
import json
import secrets
import shutil
import time
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any, SupportsFloat

import gymnasium

from gym_trainfail import text
from gym_trainfail.arms import get_arm
from gym_trainfail.call_records import RecordedCall, record_call
from gym_trainfail.cases import DEFAULT_PROFILE, Budgets, CaseSpec
from gym_trainfail.devices import DevicePool
from gym_trainfail.errors import (
    GradingError,
    SandboxLostError,
    SandboxUnavailableError,
    ToolError,
    TrainFailError,
)
from gym_trainfail.files import remove_tree
from gym_trainfail.grading import NOT_RUNNABLE, Grader, not_runnable
from gym_trainfail.ledger import Ledger, read_events, summarize
from gym_trainfail.paths import episodes_dir, home
from gym_trainfail.registry import get_case
from gym_trainfail.revisions import Checkpoints, RevisionLog, restore
from gym_trainfail.runtimes import DECOY_DIR, Runtime, find_runtime, runtime_variant
from gym_trainfail.sandbox import (
    Limits,
    Mount,
    Sandbox,
    SandboxConfig,
    create_sandbox,
    resolve_backend,
)
from gym_trainfail.sandbox.disk import DiskArea, MiB, reclaim_stale, release, split_budget
from gym_trainfail.sandbox.watch import FileWatch, arm_watched_paths
from gym_trainfail.tool_handlers import STEP_FIELDS, WRITING_TOOLS, EpisodeState, ToolHandlers
from gym_trainfail.tools import (
    ToolCall,
    parse_action,
    tool_specs,
)
from gym_trainfail.workspace_fs import WorkspaceFiles

#: Who may speak in a recorded message, what kind of text it is, and how much of it is kept.
MESSAGE_ROLES = ("assistant", "user", "system")
MESSAGE_KINDS = ("message", "reasoning")
MAX_MESSAGE_CHARS = 64_000


class TrainFailEnv(gymnasium.Env[str, str]):
    """A distributed-training failure case the agent diagnoses and repairs through tools."""

    metadata = {"render_modes": ["ansi"]}

    def __init__(
        self,
        case_id: str | None = None,
        *,
        case: CaseSpec | None = None,
        profile: str | None = None,
        arm: str = "control",
        sandbox: str = "auto",
        run_dir: str | Path | None = None,
        runs_root: str | Path | None = None,
        grade_on_end: bool = True,
        device_pool: DevicePool | None = None,
        limits: Limits | None = None,
        budgets: Mapping[str, float] | None = None,
        render_mode: str | None = None,
    ) -> None:
        if case is None:
            if case_id is None:
                raise TrainFailError("TrainFailEnv needs a case id, e.g. 'TrainFail/DDPTokenAverage-v1'")
            case = get_case(case_id)
        self.case = case = case.with_profile(profile)
        self.arm = get_arm(arm)
        self.backend = resolve_backend(sandbox)
        self.grade_on_end = grade_on_end
        self.pool = device_pool or DevicePool(backend=self.backend)
        if case.profile != DEFAULT_PROFILE:
            gpus = self.pool.size if self.pool.kind == "gpu" else 0
            why = case.profiles[case.profile].unsupported(gpus=gpus, variant=runtime_variant())
            if why:
                raise TrainFailError(f"{case.id} cannot run at profile {case.profile!r} here: {why}")
        self.limits = limits or Limits()
        self.budgets = _override_budgets(case.budgets, budgets or {})
        self.render_mode = render_mode
        self._run_dir_arg = Path(run_dir) if run_dir is not None else None
        self._runs_root = Path(runs_root) if runs_root is not None else episodes_dir()
        self._runtime: Runtime | None = None
        self._episode: EpisodeState | None = None
        self._last_observation = ""
        self._reward_status = "not-ended"
        self.observation_space = text.observation_space()
        self.action_space = text.action_space()
        workspace = "/workspace" if self.backend != "process" else "the workspace directory"
        self.tool_specs = tool_specs(workspace, self.pool.describe(), self.limits.output_bytes)
        self._tools = ToolHandlers(
            arm=self.arm,
            pool=self.pool,
            limits=self.limits,
            workspace_exclude=case.workspace_exclude,
            finish=self._finish,
        )

    # -- Gymnasium API ----------------------------------------------------------------------

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[str, dict[str, Any]]:
        """Start a new episode; ``options={"resume": RUN_DIR}`` continues an interrupted one instead.

        Other options: ``run_dir`` (where to keep this episode), ``agent`` (name recorded in it).
        """
        super().reset(seed=seed)
        self._end_episode("reset")
        options = options or {}
        if options.get("resume") is not None:
            return self._resume(Path(options["resume"]))
        run_dir = self._new_run_dir(options.get("run_dir"))
        runtime = self.runtime
        workspace = run_dir / "workspace"
        shutil.copytree(self.case.workspace_dir, workspace, symlinks=True)
        episode = self._open_episode(run_dir, workspace, started=time.time())
        meta = {
            "case": self.case.id,
            "case_hash": self.case.content_hash(),
            "case_root": str(self.case.root),
            "profile": self.case.profile,
            "arm": self.arm.name,
            "sandbox": episode.sandbox.backend,
            "runtime": runtime.digest,
            "seed": seed,
            "devices": self.pool.describe(),
            "budgets": vars(self.budgets),
            "disk_budget": episode.disk.method if episode.disk is not None else "none",
            "agent": options.get("agent"),
            "agent_options": options.get("agent_options") or {},
            "started": episode.started,
        }
        (run_dir / "episode.json").write_text(json.dumps(meta, indent=2, default=str))
        episode.ledger.append("reset", t=episode.started, **{k: v for k, v in meta.items() if k != "started"})
        episode.checkpoints.save(workspace, self.case.workspace_exclude, 0)
        observation = self._observe(self._first_observation())
        return observation, {**self._info(tool=None, error=False), "run_dir": str(run_dir)}

    def _open_episode(self, run_dir: Path, workspace: Path, started: float) -> EpisodeState:
        revisions = RevisionLog(run_dir)
        watch = self._new_watch()
        try:
            sandbox, disk = self._make_sandbox(self.runtime, workspace, watch)
        except BaseException:
            if watch is not None:
                watch.close()
            raise
        self._episode = EpisodeState(
            run_dir=run_dir,
            ledger=Ledger(run_dir / "ledger.jsonl"),
            revisions=revisions,
            checkpoints=Checkpoints(run_dir, revisions.store),
            sandbox=sandbox,
            files=WorkspaceFiles(workspace, sandbox.workspace_path),
            started=started,
            disk=disk,
            watch=watch,
        )
        return self._episode

    def _new_watch(self) -> FileWatch | None:
        """The host's watch on the arm's files, for the sandboxes of one episode. The process
        backend shows the runtime itself (nothing to bind over): only the hooks report there."""
        if self.backend == "process":
            return None
        try:
            return FileWatch(arm_watched_paths(self.arm, self.runtime), home() / "watch")
        except OSError as exc:
            raise SandboxUnavailableError(
                f"the host cannot watch the {self.arm.name} arm's files ({exc}); TrainCheck use and "
                "blocked attempts would go unrecorded. If inotify instances or watches ran out, raise "
                "fs.inotify.max_user_instances / max_user_watches (sysctl) or run fewer episodes at once"
            ) from None

    def _resume(self, run_dir: Path) -> tuple[str, dict[str, Any]]:
        """Reopen an interrupted episode: the workspace comes back from its last checkpoint,
        counters from the ledger, and the gap since the last event is recorded as a suspension."""
        run_dir = run_dir.resolve()
        try:
            meta = json.loads((run_dir / "episode.json").read_text())
            events = read_events(run_dir / "ledger.jsonl")
        except (OSError, json.JSONDecodeError) as exc:
            raise TrainFailError(f"{run_dir} is not a resumable episode: {exc}") from None
        ran = (meta.get("case"), meta.get("arm"), meta.get("profile", DEFAULT_PROFILE))
        if ran != (self.case.id, self.arm.name, self.case.profile):
            raise TrainFailError(
                f"{run_dir} is an episode of {ran[0]} ({ran[1]}, profile {ran[2]}), "
                f"not {self.case.id} ({self.arm.name}, profile {self.case.profile})"
            )
        if any(e["event"] == "finish" and e.get("reason") not in ("close", "interrupted") for e in events):
            raise TrainFailError(f"{run_dir} has already finished; it cannot be resumed")
        checkpoint = Checkpoints(run_dir, RevisionLog(run_dir).store).latest()
        if checkpoint is None:
            raise TrainFailError(f"{run_dir} has no workspace checkpoint to resume from")
        workspace = run_dir / "workspace"
        release(workspace)  # an abandoned env of this process, or a crashed process,
        reclaim_stale()  # may still have the workspace's filesystem mounted
        if workspace.exists():
            remove_tree(workspace)  # may hold a tree deeper than shutil.rmtree's recursion allows
        restore(checkpoint[1], RevisionLog(run_dir).store, workspace)
        episode = self._open_episode(run_dir, workspace, started=float(meta["started"]))
        summary = summarize(events, until=max(e["t"] for e in events))
        episode.steps = summary.steps
        episode.device_seconds = summary.solver_device_seconds
        episode.queue_wait_s = summary.queue_wait_seconds
        episode.tokens = summary.total_tokens
        submits = [e["revision"] for e in events if e["event"] == "submit"]
        episode.last_revision = submits[-1] if submits else None
        last = max(_event_time(e) for e in events)
        now = time.time()
        episode.suspended_s = summary.suspended_seconds + (now - last)
        episode.ledger.append("suspension", start=last, end=now, reason="interrupted")
        episode.ledger.append("resume", step=episode.steps, checkpoint_step=checkpoint[0], tree=checkpoint[1].digest)
        observation = self._observe(self._first_observation())
        return observation, {**self._info(tool=None, error=False), "run_dir": str(run_dir), "resumed": True}

    def step(self, action: str | Mapping[str, Any]) -> tuple[str, SupportsFloat, bool, bool, dict[str, Any]]:
        episode = self._episode
        if episode is None:
            raise gymnasium.error.ResetNeeded("call reset() before step()")
        if episode.done:
            observation = self._observe("error: this episode has ended; call reset() to start a new one")
            return observation, 0.0, True, False, self._info(tool=None, error=True)
        started = time.time()
        call: ToolCall | None = None
        error = False
        extra: dict[str, Any] = {}
        try:
            call = parse_action(action, self.tool_specs)
            self._tools.watch_call(episode, call)
            output, extra = self._tools.dispatch(episode, call)
        except ToolError as exc:
            output, error = f"error: {exc}", True
        except SandboxLostError as exc:
            output, error = self._recover_sandbox(str(exc)), True
        except OSError as exc:
            output, error = f"error: {exc.strerror or exc}", True
        except Exception as exc:  # noqa: BLE001 - an env bug must not kill the agent loop
            episode.ledger.append("internal_error", tool=call.tool if call else None, error=repr(exc))
            output, error = (
                f"error: the {call.tool if call else 'action'} tool failed internally; recorded for the operator",
                True,
            )
        episode.steps += 1
        ended = time.time()
        # Arguments are recorded bounded (long strings as previews plus size and digest): twice per step.
        recorded = record_call(call.arguments, episode.revisions.store) if call else None
        episode.ledger.append(
            "step",
            t=ended,
            index=episode.steps,
            tool=call.tool if call else None,
            **(recorded.fields() if recorded else {"arguments": {"raw": _preview(action)}}),
            start=started,
            end=ended,
            status="error" if error else "ok",
            **{k: v for k, v in extra.items() if k in STEP_FIELDS},
        )
        if call is not None and call.tool in WRITING_TOOLS and not episode.done:
            output += self._checkpoint()
        terminated = episode.done
        truncated = False
        if not terminated and (exhausted := self._exhausted_budget()) is not None:
            self._finish(f"budget:{exhausted}")
            truncated = True
        reward = self._final_reward() if (terminated or truncated) else 0.0
        observation = self._observe(output)
        info = self._info(tool=call.tool if call else None, error=error, **extra)
        if terminated or truncated:
            info["reward_status"] = self._reward_status
            info["final_revision"] = episode.last_revision
        _append_transcript(episode.run_dir, episode.steps, call, recorded, observation, terminated, truncated)
        return observation, reward, terminated, truncated, info

    def render(self) -> str | None:
        return self._last_observation if self.render_mode == "ansi" else None

    def close(self) -> None:
        self._end_episode("close")
        super().close()

    # -- accounting hooks for agent loops ---------------------------------------------------

    def record_usage(
        self,
        input_tokens: int,
        output_tokens: int,
        cached_input_tokens: int = 0,
        *,
        estimated: bool = False,
    ) -> None:
        """Report one model turn's token usage (input includes cached input, as providers report it)."""
        episode = self._require_episode()
        episode.tokens += int(input_tokens) + int(output_tokens)
        episode.ledger.append(
            "tokens",
            input=int(input_tokens),
            output=int(output_tokens),
            cached_input=int(cached_input_tokens),
            estimated=estimated,
        )

    def record_message(self, text: str, role: str = "assistant", *, kind: str = "message") -> None:
        """Record what the agent said (a message, or a reasoning summary with ``kind="reasoning"``),
        so the gym can tell when it understood the failure (:mod:`gym_trainfail.diagnosis`).

        Recorded text never affects the reward. It goes to the ledger (``message`` events) and the
        transcript; text over :data:`MAX_MESSAGE_CHARS` is cut there, with its full size noted."""
        episode = self._require_episode()
        if role not in MESSAGE_ROLES:
            raise TrainFailError(f"record_message: role must be one of {MESSAGE_ROLES}, not {role!r}")
        if kind not in MESSAGE_KINDS:
            raise TrainFailError(f"record_message: kind must be one of {MESSAGE_KINDS}, not {kind!r}")
        text = str(text)
        kept = text[:MAX_MESSAGE_CHARS]
        fields: dict[str, Any] = {"role": role, "kind": kind, "text": kept, "step": episode.steps}
        if len(kept) < len(text):
            fields["chars"] = len(text)
        record = episode.ledger.append("message", **fields)
        _write_transcript(episode.run_dir, {"message": {k: record[k] for k in ("t", "role", "kind", "text", "step")}})

    def record_suspension(self, start: float, end: float, reason: str) -> None:
        """Report time the episode was not running (provider waits, a crashed loop)."""
        episode = self._require_episode()
        episode.suspended_s += max(0.0, end - start)
        episode.ledger.append("suspension", start=start, end=end, reason=reason)

    @property
    def reward_status(self) -> str:
        """How the last episode's reward came about: ``graded``, ``no-revision``, ``deferred``,
        ``incomplete: …`` (this node cannot run some scenario), ``grading-error…`` (``not-ended``
        while it runs). Never the grade itself."""
        return self._reward_status

    @property
    def final_revision(self) -> int | None:
        """The last revision submitted in the current episode."""
        return self._episode.last_revision if self._episode else None

    @property
    def run_dir(self) -> Path | None:
        """The current episode's run directory."""
        return self._episode.run_dir if self._episode else None

    @property
    def runtime(self) -> Runtime:
        """The arm's runtime (located on first use)."""
        if self._runtime is None:
            self._runtime = find_runtime(self.arm.name)
        return self._runtime

    # -- episode lifecycle ------------------------------------------------------------------

    def _first_observation(self) -> str:
        prompt = self.case.prompt
        if self.arm.prompt_addendum:
            prompt += "\n\n" + self.arm.prompt_addendum
        tools = json.dumps(self.tool_specs, indent=1)
        return (
            f"{prompt}\n\nCall one tool per action, as JSON: "
            '{"tool": "<name>", "arguments": {...}}.\n'
            f"Limits: {self.budgets.steps} actions, {self.budgets.wall_seconds / 60:.0f} minutes, "
            f"{self.budgets.device_seconds:.0f} device-seconds.\n\nTools:\n{tools}"
        )

    def _new_run_dir(self, requested: str | Path | None) -> Path:
        if requested is not None:
            run_dir = Path(requested)
        elif self._run_dir_arg is not None:
            run_dir, self._run_dir_arg = self._run_dir_arg, None  # only the first episode takes it
        else:
            stamp = time.strftime("%Y%m%d-%H%M%S")
            run_dir = self._runs_root / f"{stamp}-{self.case.name}-{self.arm.name}-{secrets.token_hex(3)}"
        if run_dir.exists() and any(run_dir.iterdir()):
            raise TrainFailError(f"run directory {run_dir} is not empty; give a new one (or delete it)")
        run_dir.mkdir(parents=True, exist_ok=True)
        return run_dir.resolve()

    def _make_sandbox(
        self, runtime: Runtime, workspace: Path, watch: FileWatch | None = None
    ) -> tuple[Sandbox, DiskArea]:
        """A sandbox over ``workspace``, which first moves onto a filesystem of the disk budget's size
        (its ``/tmp`` takes the rest of the budget)."""
        split = split_budget(self.budgets.disk_mb * MiB)
        disk = DiskArea(workspace, split.workspace_bytes, keep=True)
        tmp_bytes = min(self.limits.tmp_bytes or split.tmp_bytes, split.tmp_bytes)
        # The watch's private copies stand in for the arm's files (and TrainCheck's, or the decoy's).
        mounts = watch.mounts() if watch is not None else tuple(Mount(s, t) for s, t in self.arm.sandbox_files())
        # The control arm's decoy is on PYTHONPATH, so `python -S` (no blocker) still reaches a watched file.
        python_path = (DECOY_DIR,) if self.arm.blocks_traincheck else ()
        limits = replace(self.limits, tmp_bytes=tmp_bytes)
        config = SandboxConfig(
            runtime=runtime, workspace=workspace, mounts=mounts, limits=limits, label="episode", python_path=python_path
        )
        try:
            return create_sandbox(self.backend, config), disk
        except BaseException:
            disk.close()
            raise

    def _checkpoint(self) -> str:
        """Checkpoint the workspace; a notice for the observation when it cannot be (too large,
        too many entries, too deep, vanished): the previous checkpoint is kept."""
        episode = self._require_episode()
        try:
            episode.checkpoints.save(episode.sandbox.host_workspace, self.case.workspace_exclude, episode.steps)
        except ToolError as exc:
            return f"\nnote: the workspace could not be checkpointed after this step: {exc}"
        except OSError:
            pass
        return ""

    def _recover_sandbox(self, reason: str) -> str:
        """Start a new sandbox from the last checkpoint; end the episode if that fails too."""
        episode = self._require_episode()
        latest = episode.checkpoints.latest()
        workspace = episode.run_dir / "workspace"
        with contextlib.suppress(OSError):
            episode.sandbox.close()
        try:
            disk, episode.disk = episode.disk, None
            if disk is not None:
                disk.close()  # copies the workspace out of its filesystem
            if latest is None:
                raise SandboxLostError("no workspace checkpoint to restore from")
            step, tree = latest
            if workspace.exists():
                for older in episode.run_dir.glob("workspace.lost-*"):  # keep one: each may hold a whole budget
                    remove_tree(older)
                shutil.move(str(workspace), episode.run_dir / f"workspace.lost-{int(time.time())}")
            restore(tree, episode.revisions.store, workspace)
            episode.sandbox, episode.disk = self._make_sandbox(self.runtime, workspace, episode.watch)
            episode.files = WorkspaceFiles(workspace, episode.sandbox.workspace_path)
        except (SandboxLostError, SandboxUnavailableError, OSError) as exc:
            episode.ledger.append("sandbox", action="lost", reason=reason, restore_error=str(exc))
            self._finish("sandbox-lost")
            return f"error: the sandbox stopped ({reason}) and could not be restarted; the episode has ended"
        episode.ledger.append("sandbox", action="restored", reason=reason, from_step=step, tree=tree.digest)
        return (
            f"error: the sandbox stopped unexpectedly ({reason}). A new sandbox was started from the workspace "
            f"as it was after step {step}; files in excluded folders ({', '.join(self.case.workspace_exclude)}) "
            "were not kept. Repeat the last action if you still need its effect."
        )

    def _exhausted_budget(self) -> str | None:
        episode = self._require_episode()
        elapsed = time.time() - episode.started - episode.queue_wait_s - episode.suspended_s
        budgets: Budgets = self.budgets
        if episode.steps >= budgets.steps:
            return "steps"
        if elapsed >= budgets.wall_seconds:
            return "wall_seconds"
        if episode.device_seconds >= budgets.device_seconds:
            return "device_seconds"
        if episode.tokens >= budgets.tokens:
            return "tokens"
        return None

    def _finish(self, reason: str, summary: str = "") -> None:
        episode = self._require_episode()
        if episode.done:
            return
        episode.done = True
        episode.ledger.append("finish", reason=reason, summary=summary[:4000], final_revision=episode.last_revision)

    def _final_reward(self) -> float:
        """The private grade of the last revision: 1.0 if it passes every scenario, else 0.0."""
        episode = self._require_episode()
        if episode.last_revision is None:
            self._reward_status = "no-revision"
            return 0.0
        if not self.grade_on_end:
            self._reward_status = "deferred"
            return 0.0
        try:
            grader = Grader(self.case, sandbox=self.backend, pool=self.pool)
            workspace = episode.run_dir / "grading" / f"revision-{episode.last_revision}"
            if workspace.exists():
                shutil.rmtree(workspace)
            tree = episode.revisions.checkout(episode.last_revision, workspace)
            receipt = grader.grade_dir(workspace, tree=tree.digest, stop_at_first_fail=True)
            shutil.rmtree(workspace, ignore_errors=True)
        except (GradingError, SandboxUnavailableError, OSError) as exc:
            self._reward_status = f"grading-error: {exc}"
            return 0.0
        except Exception as exc:  # noqa: BLE001 - env.step never raises into the agent loop
            episode.ledger.append("internal_error", tool="grading", error=repr(exc)[:2000])
            self._reward_status = f"grading-error: {exc}"
            return 0.0
        # Operator-side detail: why the revision passed or failed, never part of an observation.
        scenarios = [{"scenario": o.scenario, "kind": o.kind, "status": o.status, "reason": o.reason,
                      "metrics": o.metrics} for o in receipt.outcomes]  # fmt: skip
        result = {"revision": episode.last_revision, "tree": receipt.tree, "grader_hash": receipt.grader_hash,
                  "status": receipt.status, "reward": 1.0 if receipt.passed else 0.0,
                  "partial": receipt.partial, "scenarios": scenarios}  # fmt: skip
        (episode.run_dir / "result.json").write_text(json.dumps(result, indent=2))
        if receipt.status == "error" and (missing := not_runnable(receipt)):
            needed = max(o.metrics[NOT_RUNNABLE]["needed"] for o in missing)
            self._reward_status = (
                f"incomplete: {len(missing)} scenario(s) not runnable here (need {needed} devices, "
                f"this node has {self.pool.describe()})"
            )
            return 0.0
        if receipt.status == "error":
            self._reward_status = "grading-error"
            return 0.0
        self._reward_status = "graded"
        return 1.0 if receipt.passed else 0.0

    def _end_episode(self, reason: str) -> None:
        episode = self._episode
        if episode is None:
            return
        self._finish(reason)
        with contextlib.suppress(OSError):
            episode.sandbox.close()
        if episode.disk is not None:
            with contextlib.suppress(OSError):
                episode.disk.close()
        if episode.watch is not None:
            episode.watch.close()
        episode.ledger.close()
        self._episode = None

    def _require_episode(self) -> EpisodeState:
        if self._episode is None:
            raise gymnasium.error.ResetNeeded("call reset() before step()")
        return self._episode

    def _observe(self, observation: str) -> str:
        self._last_observation = text.normalize(observation)
        return self._last_observation

    def _info(self, *, tool: str | None, error: bool, **extra: Any) -> dict[str, Any]:
        episode = self._episode
        info: dict[str, Any] = {"tool": tool, "error": error}
        if episode is not None:
            info["step"] = episode.steps
        if "revision" in extra:
            info["revision"] = extra["revision"]
        return info


#: The episode's transcript: one JSON line per step (and per recorded message), in order.
TRANSCRIPT = "transcript.jsonl"


def _event_time(event: Mapping[str, Any]) -> float:
    return max(float(event.get(k) or 0.0) for k in ("t", "end", "released_at"))


def _append_transcript(
    run_dir: Path,
    index: int,
    call: ToolCall | None,
    recorded: RecordedCall | None,
    observation: str,
    terminated: bool,
    truncated: bool,
) -> None:
    """Record what each step answered, so an interrupted agent loop can replay finished calls.

    Arguments are recorded as the ledger records them (see :mod:`gym_trainfail.call_records`);
    the observation is already bounded by the output limit and the observation space."""
    record = {
        "index": index,
        "tool": call.tool if call else None,
        **(recorded.fields() if recorded else {"arguments": None}),
        "observation": observation,
        "terminated": terminated,
        "truncated": truncated,
    }
    _write_transcript(run_dir, record)


def _write_transcript(run_dir: Path, record: Mapping[str, Any]) -> None:
    """Append one record (a step or a message) to the episode's transcript."""
    with (run_dir / TRANSCRIPT).open("a", encoding="utf-8") as handle:
        handle.write(json.dumps(record) + "\n")


def read_transcript(run_dir: Path, *, messages: bool = False) -> list[dict[str, Any]]:
    """The recorded steps of an episode (index, tool, arguments, observation, ...), in order;
    with ``messages=True`` also the recorded messages (``{"message": {...}}``) between them."""
    path = run_dir / TRANSCRIPT
    if not path.exists():
        return []
    records = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            continue  # a torn last line from a crash
        if isinstance(record, dict) and ("index" in record or (messages and "message" in record)):
            records.append(record)
    return records


def _override_budgets(base: Budgets, overrides: Mapping[str, float]) -> Budgets:
    unknown = set(overrides) - set(vars(base))
    if unknown:
        raise TrainFailError(f"unknown budget(s) {sorted(unknown)}; budgets are {sorted(vars(base))}")
    return Budgets(
        steps=int(overrides.get("steps", base.steps)),
        wall_seconds=float(overrides.get("wall_seconds", base.wall_seconds)),
        device_seconds=float(overrides.get("device_seconds", base.device_seconds)),
        tokens=int(overrides.get("tokens", base.tokens)),
        disk_mb=int(overrides.get("disk_mb", base.disk_mb)),
    )


def _preview(action: object, limit: int = 500) -> str:
    shown = action if isinstance(action, str) else repr(action)
    return shown if len(shown) <= limit else shown[:limit] + f"… ({len(shown)} characters)"
