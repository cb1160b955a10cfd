"""The tools behind :class:`~gym_trainfail.env.TrainFailEnv`: what each tool call does to the episode.

:class:`ToolHandlers` runs one parsed call against the episode in progress (:class:`EpisodeState`)
and answers the observation text plus the fields its ledger ``step`` event may carry. It also
records what a call revealed about the arm's withheld tools: ``audit`` events from the host's
watch, the arm's hooks and a scan of the call's own arguments. The env keeps the Gymnasium
lifecycle (reset, step bookkeeping, budgets, recovery, the reward) and delegates here.

Handlers raise :class:`~gym_trainfail.errors.ToolError` (shown to the model) or
:class:`~gym_trainfail.errors.SandboxLostError` (the env restarts the sandbox); they never
decide how an episode ends, except through the ``finish`` callback the env gives them.

A command that does not finish (a job whose ranks wait on each other forever) ends at its
deadline: the time-out the agent gave, or less where the episode's budget (wall-clock seconds,
and for a job its device-seconds) would run out first. Its whole process tree is stopped, what
it printed until then is the observation, its devices go back to the pool, the step is recorded
like any other (``timed_out``), and the episode goes on while budget is left. Agent commands run
with ``PYTHONFAULTHANDLER=1`` (:data:`AGENT_ENV`): ``kill -ABRT <pid>`` makes a Python process
print every thread's stack to its stderr as it ends, so a hung job can show where each rank waits.
"""

from __future__ import annotations

import signal
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gym_trainfail.arms import Arm
from gym_trainfail.cases import Budgets
from gym_trainfail.devices import DevicePool
from gym_trainfail.hardware import Device
from gym_trainfail.ledger import Ledger
from gym_trainfail.revisions import Checkpoints, RevisionLog
from gym_trainfail.sandbox import ExecResult, Limits, Sandbox
from gym_trainfail.sandbox.disk import DiskArea
from gym_trainfail.sandbox.watch import FileWatch
from gym_trainfail.tools import DEFAULT_JOB_TIMEOUT_S, DEFAULT_SHELL_TIMEOUT_S, ToolCall
from gym_trainfail.workspace_fs import WorkspaceFiles

#: What a tool handler's extra fields may add to its step event.
STEP_FIELDS = ("exit_code", "timed_out", "oom_killed", "revision", "forged_audit_records")

#: Tools that may change the workspace (the env checkpoints it after them).
WRITING_TOOLS = frozenset({"shell", "write_file", "edit_file", "run_job"})

_FILE_TOOLS = frozenset({"read_file", "write_file", "edit_file", "list_files"})

#: What every agent command runs with beyond the sandbox's environment: Python's fault handler
#: on, so that a fatal signal (``kill -ABRT <pid>`` on a hung rank, a segfault) prints every
#: thread's Python stack to stderr. Grading phases do not get it (their logs stay as they were).
AGENT_ENV = {"PYTHONFAULTHANDLER": "1"}

Handled = tuple[str, dict[str, Any]]


@dataclass
class EpisodeState:
    """State of the episode in progress."""

    run_dir: Path
    ledger: Ledger
    revisions: RevisionLog
    checkpoints: Checkpoints
    sandbox: Sandbox
    files: WorkspaceFiles
    started: float
    steps: int = 0
    device_seconds: float = 0.0
    queue_wait_s: float = 0.0
    suspended_s: float = 0.0
    tokens: int = 0
    last_revision: int | None = None
    done: bool = False
    #: The filesystem that bounds the workspace's disk use (closed, contents kept, with the sandbox).
    disk: DiskArea | None = None
    #: The host's watch on the arm's files (isolating backends only).
    watch: FileWatch | None = None


class ToolHandlers:
    """Runs tool calls against an episode; one instance serves every episode of an env."""

    def __init__(
        self,
        *,
        arm: Arm,
        pool: DevicePool,
        limits: Limits,
        workspace_exclude: Sequence[str],
        finish: Callable[[str, str], None],
        budgets: Budgets | None = None,
    ) -> None:
        self.arm = arm
        self.pool = pool
        self.limits = limits
        self.workspace_exclude = tuple(workspace_exclude)
        #: The episode's budgets: a command's time-out never reaches past them (``None``: only
        #: the time-out the agent gave counts).
        self.budgets = budgets
        #: Ends the episode: ``finish(reason, summary)`` (the env's own bookkeeping).
        self._finish = finish

    def dispatch(self, episode: EpisodeState, call: ToolCall) -> Handled:
        """Run ``call`` (already validated against the tool schemas)."""
        args = call.arguments
        if call.tool in _FILE_TOOLS:
            episode.sandbox.check_alive()
        if call.tool == "shell":
            return self.shell(episode, args["command"], args.get("timeout_s", DEFAULT_SHELL_TIMEOUT_S))
        if call.tool == "run_job":
            timeout_s = args.get("timeout_s", DEFAULT_JOB_TIMEOUT_S)
            return self.run_job(episode, args["command"], args["devices"], timeout_s)
        if call.tool == "read_file":
            return episode.files.read(args["path"], args.get("start_line"), args.get("end_line")), {}
        if call.tool == "write_file":
            return episode.files.write(args["path"], args["content"]), {}
        if call.tool == "edit_file":
            replace_all = args.get("replace_all", False)
            return episode.files.edit(args["path"], args["old_text"], args["new_text"], replace_all), {}
        if call.tool == "list_files":
            return episode.files.listing(args.get("path", "."), args.get("max_depth", 3)), {}
        if call.tool == "submit":
            return self.submit(episode)
        if call.tool == "finish":
            return self.finish(episode, args.get("summary", ""))
        raise KeyError(call.tool)  # parse_action admits only the tools above

    def shell(self, episode: EpisodeState, command: str, timeout_s: int) -> Handled:
        limit, why = self.deadline(episode, timeout_s)
        result = self.exec(episode, command, limit, "shell")
        return format_exec(result, limit, self.limits, why), exec_fields(result)

    def deadline(
        self, episode: EpisodeState, timeout_s: float, devices: int = 0, queued_s: float = 0.0
    ) -> tuple[float, str]:
        """The time a command gets, and why when it is less than ``timeout_s``: the episode's
        remaining wall-clock budget (``queued_s``: a wait for devices not yet on the episode's
        books, which the budget does not count), and for a job on ``devices`` devices its
        remaining device-seconds. At least one second: the env ends a spent episode after the step."""
        if self.budgets is None:
            return float(timeout_s), ""
        elapsed = time.time() - episode.started - episode.queue_wait_s - queued_s - episode.suspended_s
        limits = [
            (float(timeout_s), ""),
            (self.budgets.wall_seconds - elapsed, "the episode's remaining wall-clock budget"),
        ]
        if devices:
            left = (self.budgets.device_seconds - episode.device_seconds) / devices
            limits.append((left, "the episode's remaining device-seconds"))
        limit, why = min(limits, key=lambda item: item[0])
        return max(1.0, limit), why

    def run_job(self, episode: EpisodeState, command: str, devices: int, timeout_s: int) -> Handled:
        lease = self.pool.acquire(devices)
        limit, why = self.deadline(episode, timeout_s, len(lease.devices), lease.queue_wait_s)
        try:
            result = self.exec(episode, command, limit, "run_job", lease.devices, devices=len(lease.devices))
        finally:
            lease.release()
            episode.device_seconds += lease.device_seconds
            episode.queue_wait_s += lease.queue_wait_s
            episode.ledger.append(
                "device",
                role="solver",
                kind=self.pool.kind,
                devices=len(lease.devices),
                ids=[d.index for d in lease.devices],
                queued_at=lease.queued_at,
                started_at=lease.started_at,
                released_at=lease.released_at,
                device_seconds=lease.device_seconds,
            )
        noun = "GPU" if self.pool.kind == "gpu" else "CPU rank"
        header = f"job ran on {len(lease.devices)} {noun}{'s' if len(lease.devices) != 1 else ''}\n"
        return header + format_exec(result, limit, self.limits, why), exec_fields(result)

    def submit(self, episode: EpisodeState) -> Handled:
        episode.sandbox.check_alive()
        number, tree = episode.revisions.record(episode.sandbox.host_workspace, self.workspace_exclude)
        episode.last_revision = number
        episode.ledger.append("submit", revision=number, tree=tree.digest, files=len(tree.entries))
        return f"revision {number} recorded", {"revision": number}

    def finish(self, episode: EpisodeState, summary: str) -> Handled:
        self._finish("finish", summary)
        last = episode.last_revision
        note = f"revision {last} is the final revision" if last else "no revision was submitted"
        return f"episode finished; {note}", {}

    def exec(
        self,
        episode: EpisodeState,
        command: str,
        timeout_s: float,
        tool: str,
        assigned: Sequence[Device] = (),
        **context: Any,
    ) -> ExecResult:
        """Run ``command`` in the sandbox; what the host's watch and the arm's hooks saw of it goes
        to the ledger as ``audit`` events of this step."""
        watch = episode.watch
        if watch is not None:
            watch.begin()
        try:
            result = episode.sandbox.exec(["bash", "-c", command], timeout_s=timeout_s, devices=assigned, env=AGENT_ENV)
        finally:
            for report in watch.collect() if watch is not None else ():
                self.audit_event(episode, "watch", report, tool, **context)
        for report in result.audit:
            self.audit_event(episode, "hook", report, tool, **context)
        return result

    def audit_event(
        self, episode: EpisodeState, source: str, report: Mapping[str, Any], tool: str, **context: Any
    ) -> None:
        """One ``audit`` event: a report about the step in progress, never read as any other kind.

        ``source`` says who saw it: ``watch`` (the host's inotify watch), ``hook`` (the arm's hooks
        inside the sandbox, over the audit channel; schema-checked, yet forgeable) or ``call`` (the
        host's scan of the tool call itself)."""
        episode.ledger.append("audit", step=episode.steps + 1, tool=tool, source=source, report=dict(report), **context)

    def watch_call(self, episode: EpisodeState, call: ToolCall) -> None:
        """Record tool calls that name a tool the arm withholds (reimplementation cannot be
        blocked, only seen: commands, and text written into the workspace)."""
        if not self.arm.watched_words:
            return
        texts = {key: value for key, value in call.arguments.items() if isinstance(value, str)}
        for key, value in texts.items():
            lowered = value.lower()
            for word in self.arm.watched_words:
                if word in lowered:
                    where = texts.get("path", "") if key in ("content", "new_text") else ""
                    report = {"type": "mention", "argument": key, "word": word, "path": where[:300]}
                    self.audit_event(episode, "call", report, call.tool)


def format_exec(result: ExecResult, timeout_s: float, limits: Limits, why: str = "") -> str:
    """A finished command as the model reads it: how it ended, then its output. ``why`` names
    the limit when the time-out was not the one the agent gave (the episode's budget)."""
    if result.timed_out:
        limit = f"{why}; " if why else ""
        status = f"killed: timed out after {timeout_s:.0f} s ({limit}the whole process tree was stopped)"
    elif result.oom_killed:
        limit = f"{limits.memory_bytes / 2**30:.0f} GiB" if limits.memory_bytes else "the host's"
        status = f"killed: out of memory (limit {limit}); exit code {result.exit_code}"
    elif (sig := result.killed_by) is not None and result.exit_code not in (None, 0, 1, 2):
        name = signal.Signals(sig).name if sig in signal.Signals._value2member_map_ else str(sig)
        status = f"exit code {result.exit_code} (killed by {name})"
    else:
        status = f"exit code {result.exit_code}"
    parts = [status]
    if result.stdout:
        parts.append("--- stdout ---\n" + result.stdout.rstrip("\n"))
    if result.stderr:
        parts.append("--- stderr ---\n" + result.stderr.rstrip("\n"))
    return "\n".join(parts)


def exec_fields(result: ExecResult) -> dict[str, Any]:
    """The step-event fields of a finished command."""
    fields: dict[str, Any] = {
        "exit_code": result.exit_code,
        "timed_out": result.timed_out,
        "oom_killed": result.oom_killed,
    }
    if result.audit_rejected:  # lines on the audit channel that were not a valid record: dropped
        fields["forged_audit_records"] = result.audit_rejected
    return fields
