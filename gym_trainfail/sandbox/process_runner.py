"""Run one command with a timeout, capped output and a whole-tree kill.

Shared by the host-process backends (``bwrap``, ``process``). The command starts in a new
session; on timeout, or as soon as it exits, everything left in its process group and its
cgroup is killed, so no background process outlives the step that started it.
"""

from __future__ import annotations

import contextlib
import os
import selectors
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from gym_trainfail.sandbox.audit import AuditReports, parse_reports
from gym_trainfail.sandbox.base import ExecResult, Limits
from gym_trainfail.sandbox.cgroups import JOIN_SCRIPT, Cgroup, cgroup_support

#: After the main process exits, how long to keep draining pipes held by stragglers.
_DRAIN_S = 1.0


class CappedBuffer:
    """Keeps the first and last bytes of a stream, counting what it drops in between."""

    def __init__(self, limit: int) -> None:
        self.limit = max(limit, 64)
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0

    def write(self, data: bytes) -> None:
        self.total += len(data)
        room = self.limit * 3 // 4 - len(self.head)
        if room > 0:
            self.head += data[:room]
            data = data[room:]
        if data:
            self.tail += data
            keep = self.limit - self.limit * 3 // 4
            if len(self.tail) > keep:
                del self.tail[: len(self.tail) - keep]

    @property
    def truncated(self) -> bool:
        return self.total > len(self.head) + len(self.tail)

    def text(self) -> str:
        """Decoded output with a notice where bytes were dropped."""
        head = self.head.decode("utf-8", "replace")
        if not self.truncated:
            return head + self.tail.decode("utf-8", "replace")
        dropped = self.total - len(self.head) - len(self.tail)
        notice = f"\n[... {dropped} bytes of output omitted (limit {self.limit} bytes per stream) ...]\n"
        return head + notice + self.tail.decode("utf-8", "replace")


@dataclass(frozen=True)
class RawResult:
    """What the host saw of a finished command."""

    returncode: int | None
    stdout: CappedBuffer
    stderr: CappedBuffer
    timed_out: bool
    oom_killed: bool
    duration_s: float
    audit: CappedBuffer | None = None


class AuditChannel:
    """A pipe whose write end a sandboxed command inherits (its number in ``TRAINFAIL_AUDIT_FD``).

    Arm hooks inside the sandbox (the control arm's blocker, the treatment arm's usage
    tracker) write one JSON object per line to it. The host reads the pipe while the command
    runs, so what was written is out of the command's reach: it cannot be erased afterwards.
    Anything may be written to it, though: :func:`parse_audit` keeps only valid records.
    """

    def __init__(self) -> None:
        self.read_fd, self.write_fd = os.pipe()
        os.set_inheritable(self.write_fd, True)

    def close_write(self) -> None:
        # Close each end once: a second close could hit a number another thread has reused.
        if self.write_fd >= 0:
            fd, self.write_fd = self.write_fd, -1
            os.close(fd)

    def close(self) -> None:
        self.close_write()
        if self.read_fd >= 0:
            fd, self.read_fd = self.read_fd, -1
            os.close(fd)


def parse_audit(buffer: CappedBuffer | None) -> AuditReports:
    """The valid records written to an audit channel; every other line is counted, not kept."""
    if buffer is None:
        return AuditReports()
    return parse_reports(buffer.text().encode())


def run_capped(
    argv: Sequence[str],
    *,
    env: Mapping[str, str],
    cwd: Path | None,
    timeout_s: float,
    output_limit: int,
    cgroup: Cgroup | None = None,
    stdin: bytes | None = None,
    audit: AuditChannel | None = None,
    pass_fds: Sequence[int] = (),
) -> RawResult:
    """Run ``argv`` to completion or timeout; never leaves a process behind. The child inherits
    the audit channel's write end and ``pass_fds``, no other descriptor."""
    command = list(argv)
    if cgroup is not None:
        command = ["/bin/sh", "-c", JOIN_SCRIPT, "sh", *cgroup.procs_files, "--", *command]
    out, err = CappedBuffer(output_limit), CappedBuffer(output_limit)
    start = time.monotonic()
    proc = subprocess.Popen(  # noqa: S603 - argument list, never a shell string built from values
        command,
        env=dict(env),
        cwd=cwd,
        stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
        pass_fds=(*pass_fds, *((audit.write_fd,) if audit is not None else ())),
    )
    audit_buffer = None
    if audit is not None:
        audit.close_write()  # the child holds the only write end now: EOF when it is gone
        audit_buffer = CappedBuffer(256_000)
    if stdin is not None and proc.stdin is not None:
        with contextlib.suppress(BrokenPipeError):
            proc.stdin.write(stdin)
        proc.stdin.close()
    timed_out = False
    try:
        timed_out = _pump(proc, out, err, start + timeout_s, audit, audit_buffer)
    finally:
        _kill_tree(proc, cgroup)
        if audit is not None:
            audit.close()
    returncode = proc.wait()
    oom = cgroup.oom_killed() if cgroup is not None else False
    return RawResult(
        returncode=None if timed_out else returncode,
        stdout=out,
        stderr=err,
        timed_out=timed_out,
        oom_killed=oom,
        duration_s=time.monotonic() - start,
        audit=audit_buffer,
    )


def _pump(
    proc: subprocess.Popen[bytes],
    out: CappedBuffer,
    err: CappedBuffer,
    deadline: float,
    audit: AuditChannel | None = None,
    audit_buffer: CappedBuffer | None = None,
) -> bool:
    """Copy output until every pipe closes; True if the deadline passed first."""
    assert proc.stdout is not None and proc.stderr is not None
    selector = selectors.DefaultSelector()
    selector.register(proc.stdout, selectors.EVENT_READ, out)
    selector.register(proc.stderr, selectors.EVENT_READ, err)
    if audit is not None and audit_buffer is not None:
        selector.register(audit.read_fd, selectors.EVENT_READ, audit_buffer)
    exited_at: float | None = None
    try:
        while selector.get_map():
            now = time.monotonic()
            if now >= deadline:
                return True
            if exited_at is None and proc.poll() is not None:
                exited_at = now
            if exited_at is not None and now - exited_at > _DRAIN_S:
                break  # a straggler holds the pipe open; it is killed with the tree
            wait = min(deadline - now, 0.1 if exited_at is None else _DRAIN_S)
            for key, _ in selector.select(timeout=wait):
                chunk = os.read(key.fd, 65536)
                if not chunk:
                    selector.unregister(key.fileobj)
                    continue
                key.data.write(chunk)
    finally:
        selector.close()
    return False


def _kill_tree(proc: subprocess.Popen[bytes], cgroup: Cgroup | None) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    if cgroup is not None:
        cgroup.kill_all()
    for stream in (proc.stdout, proc.stderr):
        if stream is not None:
            stream.close()


def run_limited(
    argv: Sequence[str],
    *,
    env: Mapping[str, str],
    cwd: Path | None,
    timeout_s: float,
    limits: Limits,
    stdin: bytes | None = None,
    audit: AuditChannel | None = None,
    pass_fds: Sequence[int] = (),
) -> ExecResult:
    """Run ``argv`` in a fresh cgroup with ``limits`` (when the kernel allows one)."""
    group = None
    if cgroup_support().version and (limits.memory_bytes or limits.pids):
        with contextlib.suppress(OSError):
            group = Cgroup.create(memory_bytes=limits.memory_bytes, pids=limits.pids)
    try:
        raw = run_capped(
            argv,
            env=env,
            cwd=cwd,
            timeout_s=timeout_s,
            output_limit=limits.output_bytes,
            cgroup=group,
            stdin=stdin,
            audit=audit,
            pass_fds=pass_fds,
        )
    finally:
        if group is not None:
            group.remove()
    reports = parse_audit(raw.audit)
    return ExecResult(
        exit_code=raw.returncode,
        stdout=raw.stdout.text(),
        stderr=raw.stderr.text(),
        timed_out=raw.timed_out,
        oom_killed=raw.oom_killed,
        output_truncated=raw.stdout.truncated or raw.stderr.truncated,
        duration_s=raw.duration_s,
        audit=reports.records,
        audit_rejected=reports.rejected,
    )
