"""torchrun-style launches from a server that has already imported the heavy libraries.

Most of a scenario's time is start-up: every torchrun worker imports torch, DeepSpeed and
megatron-core (seconds each on a loaded CPU host) before the first step. A group of scenarios
can pay that once: ``python warm_launch.py --serve --preload torch,deepspeed,megatron.core``
imports the libraries and then, per request read from stdin, forks a leader in a new session
that forks one process per rank and runs ``python -m MODULE ARGS`` in each, with the
environment torchrun gives its workers (``RANK``, ``LOCAL_RANK``, ``WORLD_SIZE``,
``LOCAL_WORLD_SIZE``, ``GROUP_RANK``, ``ROLE_*``, ``MASTER_ADDR``/``MASTER_PORT``,
``TORCHELASTIC_*``). Rank 0 hosts the rendezvous store, as with ``init_process_group`` on
``env://`` outside torchrun.

What a rank inherits from the server, and why a verdict cannot depend on it:

* the preloaded modules, imported but never used (no tensor op ran, no thread was started:
  the server refuses to serve if its import left a second thread running);
* nothing of the pipeline: the server imports no workspace or grader module, and each rank
  gets ``sys.path[0]`` = its working directory, as ``python -m`` gives it;
* fresh entropy: ``random`` and NumPy's global generator are re-seeded from the OS in every
  rank (a fresh interpreter seeds them that way too); torch's default generator has the
  same fixed initial seed in a fresh interpreter as here.

Environment variables that a preloaded library reads at import time keep the server's
values, so the server must be started with the environment the ranks would get
(``OMP_NUM_THREADS`` above all). Like torchrun, the leader stops the other ranks when one
exits with a non-zero code, and reports the first failure.

:func:`launch_cold` is the one-scenario path (a fresh ``torchrun`` or any other command run to
completion or its time limit); both paths answer with an :class:`Ended`.

**A launch leaves no process behind.** torchrun starts each worker in a session of its own, so
killing torchrun's process group at a time limit would leave hung ranks running (and holding
their devices) into the next scenario of a group. Both paths therefore stop the launch's whole
process tree (:func:`kill_tree`: every descendant is stopped first, so none can fork or be
reparented while the tree is walked, then all are killed), and the process that launches
adopts orphans (``PR_SET_CHILD_SUBREAPER``) so that whatever a launch daemonised is still found
and killed when the launch ends. :func:`set_deadline` caps every launch at the scenario's
deadline (the run kit sets it from the scenario's ``timeout_s``).
"""

from __future__ import annotations

import argparse
import atexit
import contextlib
import ctypes
import gc
import importlib
import io
import json
import os
import random
import runpy
import signal
import socket
import subprocess
import sys
import threading
import time
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Any

if __package__:  # imported as part of the package
    from . import determinism as _determinism
else:  # run as a script from /harnesslib
    import determinism as _determinism  # type: ignore[no-redef,import-not-found,unused-ignore]

#: Seconds a rank gets between SIGTERM and SIGKILL when another rank failed (torchrun: 30).
STOP_GRACE_S = 10.0
#: How long :func:`kill_tree` waits for killed children to be reaped (a process stuck in the
#: kernel dies later; the sandbox's own close is the backstop).
REAP_WAIT_S = 5.0
PR_SET_CHILD_SUBREAPER = 36

#: The scenario's deadline (``time.monotonic()``), if the run kit set one: every launch is capped at it.
_deadline: float | None = None
#: Whether this process adopts orphans (:func:`become_subreaper`): then a launch's leftovers are its children.
_subreaper = False


def set_deadline(seconds: float | None) -> None:
    """Cap every launch from now on at ``seconds`` from now (``None``: no cap). The run kit sets
    the scenario's deadline before each scenario, so a scenario of several launches (an
    interrupted and resumed run) stops at it too, and clears it afterwards."""
    global _deadline  # noqa: PLW0603 - one run kit process, one scenario at a time
    _deadline = None if seconds is None else time.monotonic() + max(0.0, seconds)


def capped(timeout_s: float) -> float:
    """``timeout_s``, or less where the scenario's deadline comes sooner (never below 0)."""
    if _deadline is None:
        return timeout_s
    return max(0.0, min(timeout_s, _deadline - time.monotonic()))


def become_subreaper() -> bool:
    """Adopt the orphans of everything this process starts (Linux ``PR_SET_CHILD_SUBREAPER``), so
    that a process a launch daemonised can still be found and stopped when the launch ends; False
    where not possible. The run kit (:func:`runkit.main`) and the warm server call it; a program
    that only calls :func:`launch_cold` keeps its own behaviour (no orphans come to it)."""
    global _subreaper  # noqa: PLW0603 - a property of this process
    try:
        _subreaper = _subreaper or int(ctypes.CDLL(None).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)) == 0
    except (OSError, AttributeError):
        return False
    return _subreaper


def children_by_parent() -> dict[int, list[int]]:
    """Every process this process can see, by parent pid (``/proc/<pid>/stat``)."""
    children: dict[int, list[int]] = {}
    try:
        names = os.listdir("/proc")
    except OSError:
        return children
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as fh:
                stat = fh.read()
            # "pid (comm) state ppid ...": comm may hold spaces and parentheses; split after the last ")"
            ppid = int(stat.rsplit(b")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(ppid, []).append(int(name))
    return children


def kill_tree(root: int) -> list[int]:
    """SIGKILL ``root`` and every process below it, whatever session or group each is in.

    The tree is stopped from the top down (SIGSTOP), and only the children of processes already
    stopped are signalled next: a stopped process can neither fork nor reap, so none of its
    children can vanish and have its pid reused before it is stopped too, and none is missed.
    Then all are killed, and our own children among them reaped (bounded by
    :data:`REAP_WAIT_S`). Answers the pids signalled."""
    _signal(root, signal.SIGSTOP)
    stopped, seen = [root], {root}
    settled = False
    for _ in range(1000):  # bounded: each round goes one level deeper, and nothing below can grow
        by_parent = children_by_parent()
        new = [child for parent in stopped for child in by_parent.get(parent, ()) if child not in seen]
        if not new:
            if settled:
                break
            settled = True  # a stop is delivered asynchronously: look once more, a moment later
            time.sleep(0.01)
            continue
        settled = False
        for pid in new:
            _signal(pid, signal.SIGSTOP)
        stopped += new
        seen.update(new)
    for pid in stopped:
        _signal(pid, signal.SIGKILL)
    _reap(stopped)
    return stopped


def kill_adopted(keep: set[int]) -> list[int]:
    """Kill every child of this process not in ``keep``, with its tree: what a launch left
    behind and this process adopted as subreaper (:func:`become_subreaper`; without it, nothing
    is adopted and nothing is killed)."""
    killed: list[int] = []
    if not _subreaper:
        return killed
    for pid in children_by_parent().get(os.getpid(), []):
        if pid not in keep:
            killed += kill_tree(pid)
    return killed


def _signal(pid: int, signum: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(pid, signum)


def _reap(pids: list[int]) -> None:
    """Collect the exit status of those of ``pids`` that are this process's children."""
    waiting = set(pids)
    deadline = time.monotonic() + REAP_WAIT_S
    while waiting and time.monotonic() < deadline:
        for pid in list(waiting):
            try:
                done, _ = os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:  # not our child (or already collected): nothing to reap
                waiting.discard(pid)
                continue
            if done:
                waiting.discard(pid)
        if waiting:
            time.sleep(0.02)


@dataclass(frozen=True)
class Ended:
    """How a launch ended: its exit code (``None`` when it was killed at its time limit) and
    when it started and ended (epoch seconds)."""

    returncode: int | None
    started: float
    ended: float

    @property
    def timed_out(self) -> bool:
        return self.returncode is None


def launch_cold(argv: list[str], cwd: Path, env: dict[str, str], log_path: Path, timeout_s: float) -> Ended:
    """Run ``argv`` in a new session, output to ``log_path``, until it exits or ``timeout_s``
    passes (or the scenario's deadline, :func:`set_deadline`); then everything it started is
    killed, whatever session it moved to (:func:`kill_tree`), and so is anything it left
    running after a normal exit."""
    started = time.time()
    limit = capped(timeout_s)
    if limit <= 0:
        log_path.write_text("[warm_launch] not started: the scenario's deadline had passed\n")
        return Ended(None, started, time.time())
    before = set(children_by_parent().get(os.getpid(), [])) if _subreaper else set()
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(
            argv,
            cwd=cwd,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
        try:
            returncode: int | None = proc.wait(timeout=limit)
        except subprocess.TimeoutExpired:
            returncode = None
            kill_tree(proc.pid)  # reaps it: Popen.wait then answers at once
            proc.wait()
        finally:
            # what the launch daemonised (adopted by this process, when it is a subreaper) dies
            # with it; after a time-out this also catches a process that escaped kill_tree's walk
            kill_adopted(before)
    return Ended(returncode, started, time.time())


class WarmLauncher:
    """The harness side: starts the server once and sends it one launch at a time."""

    def __init__(self, preload: list[str], env: dict[str, str], log_path: Path, python: str = sys.executable) -> None:
        began = time.time()
        self._log = open(log_path, "ab")  # noqa: SIM115 - lives as long as the server
        self.proc = subprocess.Popen(
            [python, str(Path(__file__).resolve()), "--serve", "--preload", ",".join(preload)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._log,
            env=env,
            cwd="/",
            start_new_session=True,
            text=True,
            bufsize=1,
        )
        ready = self._reply()
        if ready.get("ready") is not True:
            self.close()
            raise RuntimeError(f"warm launcher did not start: {ready}")
        #: Seconds from spawning the server to its readiness (interpreter start and preloading).
        self.startup_s = time.time() - began

    def _reply(self) -> dict[str, Any]:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"warm launcher exited (code {self.proc.poll()})")
        reply: dict[str, Any] = json.loads(line)
        return reply

    def launch(
        self,
        module: str,
        args: list[str],
        nproc: int,
        cwd: Path,
        env: dict[str, str],
        log_path: Path,
        timeout_s: float,
        setup: str = "",
    ) -> Ended:
        """Run ``python -m module args`` on ``nproc`` ranks until they exit or ``timeout_s`` (or
        the scenario's deadline, :func:`set_deadline`); then the launch's whole tree is gone.

        ``setup`` (``"module:function"``) is called in each rank once its environment is in
        place and before ``module`` runs: what a ``sitecustomize`` on ``PYTHONPATH`` would do
        at interpreter start-up in a cold launch.
        """
        assert self.proc.stdin is not None
        limit = capped(timeout_s)
        if limit <= 0:
            now = time.time()
            log_path.write_text("[warm_launch] not started: the scenario's deadline had passed\n")
            return Ended(None, now, now)
        request = {
            "module": module,
            "args": args,
            "nproc": nproc,
            "cwd": str(cwd),
            "env": env,
            "log": str(log_path),
            "timeout_s": limit,
            "setup": setup,
        }
        self.proc.stdin.write(json.dumps(request) + "\n")
        self.proc.stdin.flush()
        reply = self._reply()
        return Ended(reply["returncode"], float(reply["started"]), float(reply["ended"]))

    def close(self) -> None:
        """Stop the server and anything it still runs (its launches' leaders have sessions of
        their own: the whole tree goes)."""
        if self.proc.poll() is None:
            kill_tree(self.proc.pid)  # reaps it: Popen.wait then answers at once
        self.proc.wait()
        self._log.close()

    def __enter__(self) -> WarmLauncher:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# --- server side ----------------------------------------------------------------------------


def free_port() -> int:
    """A TCP port on loopback that nothing listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def rank_env(base: dict[str, str], rank: int, nproc: int, port: int, run_id: str) -> dict[str, str]:
    """What torchrun --standalone puts in a worker's environment (single node)."""
    env = dict(base)
    env.update(
        {
            "RANK": str(rank),
            "LOCAL_RANK": str(rank),
            "WORLD_SIZE": str(nproc),
            "LOCAL_WORLD_SIZE": str(nproc),
            "GROUP_RANK": "0",
            "GROUP_WORLD_SIZE": "1",
            "ROLE_RANK": str(rank),
            "ROLE_WORLD_SIZE": str(nproc),
            "ROLE_NAME": "default",
            "MASTER_ADDR": "127.0.0.1",
            "MASTER_PORT": str(port),
            "TORCHELASTIC_RUN_ID": run_id,
            "TORCHELASTIC_RESTART_COUNT": "0",
            "TORCHELASTIC_MAX_RESTARTS": "0",
        }
    )
    env.setdefault("OMP_NUM_THREADS", "1")
    return env


def run_rank(module: str, args: list[str], cwd: str, env: dict[str, str], setup: str = "") -> int:
    """In a forked rank: become ``python -m module args`` and return its exit code.

    The rank ends the way an interpreter does (``atexit`` handlers, then every open file
    flushed) before the caller's ``os._exit``, so a pipeline that leaves a file unclosed loses
    nothing it would not lose in a cold launch.
    """
    os.environ.clear()
    os.environ.update(env)
    os.chdir(cwd)
    sys.path.insert(0, cwd)
    sys.argv = [module, *args]
    random.seed()
    if "numpy" in sys.modules:
        sys.modules["numpy"].random.seed()
    try:
        if _determinism.wanted(env):
            _determinism.apply_from_env()
        if setup:
            owner, _, function = setup.partition(":")
            getattr(importlib.import_module(owner), function)()
        runpy.run_module(module, run_name="__main__", alter_sys=True)
        code = 0
    except SystemExit as stop:
        code = exit_code(stop)
    except BaseException:  # noqa: BLE001 - a rank's crash is its exit code, as in python -m
        traceback.print_exc()
        code = 1
    return finish_like_interpreter_exit(code)


def exit_code(stop: SystemExit) -> int:
    """The status ``sys.exit(x)`` gives a process."""
    if stop.code is None:
        return 0
    if isinstance(stop.code, int):
        return stop.code
    print(stop.code, file=sys.stderr)
    return 1


def finish_like_interpreter_exit(code: int) -> int:
    """Run ``atexit`` handlers and flush open files, as interpreter shutdown would."""
    try:
        atexit._run_exitfuncs()
    except SystemExit as stop:
        code = exit_code(stop)
    except BaseException:  # noqa: BLE001 - reported as the interpreter would, not fatal
        traceback.print_exc()
    for obj in gc.get_objects():
        if isinstance(obj, io.IOBase):
            with contextlib.suppress(Exception):
                if not obj.closed:
                    obj.flush()
    return code


def lead(request: dict[str, Any]) -> int:
    """In the leader (own session): fork the ranks, wait, stop the rest on the first failure."""
    fd = os.open(request["log"], os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    nproc = int(request["nproc"])
    port = free_port()
    run_id = f"warm-{os.getpid()}"
    children: dict[int, int] = {}
    for rank in range(nproc):
        pid = os.fork()
        if pid == 0:
            env = rank_env(request["env"], rank, nproc, port, run_id)
            code = run_rank(request["module"], request["args"], request["cwd"], env, request.get("setup", ""))
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(code & 0xFF)
        children[pid] = rank
    first_failure = 0
    while children:
        pid, status = os.wait()
        rank = children.pop(pid)
        code = os.waitstatus_to_exitcode(status)
        if code != 0 and first_failure == 0:
            first_failure = 1
            print(f"[warm_launch] rank {rank} exited with code {code}; stopping the other ranks", flush=True)
            stop_ranks(children)
    return first_failure


def stop_ranks(children: dict[int, int]) -> None:
    """SIGTERM, then SIGKILL after a grace period, like torchrun's agent; reaps them all."""
    for pid in children:
        os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + STOP_GRACE_S
    while children and time.monotonic() < deadline:
        for pid in list(children):
            if os.waitpid(pid, os.WNOHANG)[0]:
                children.pop(pid)
        time.sleep(0.1)
    for pid in list(children):
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        children.pop(pid)


def serve_one(request: dict[str, Any], channel: int) -> dict[str, Any]:
    """Run one launch to completion or its timeout; the reply for the harness."""
    sys.stdout.flush()
    sys.stderr.flush()
    started = time.time()
    leader = os.fork()
    if leader == 0:
        os.setsid()
        os.close(channel)
        code = 1
        try:
            code = lead(request)
        finally:
            os._exit(code)
    deadline = time.monotonic() + float(request["timeout_s"])
    try:
        while True:
            done, status = os.waitpid(leader, os.WNOHANG)
            if done:
                return {"returncode": os.waitstatus_to_exitcode(status), "started": started, "ended": time.time()}
            if time.monotonic() > deadline:
                kill_tree(leader)  # the leader, every rank and whatever a rank started, in any session
                return {"returncode": None, "started": started, "ended": time.time()}
            time.sleep(0.05)
    finally:
        kill_adopted(set())  # the server's only children are leaders: anything adopted is a leftover


def serve(preload: list[str]) -> None:
    """Import ``preload``, announce readiness, then serve launches until stdin closes.

    Replies go out on the original stdout; the server's own stdout is pointed at its stderr
    first, so that whatever a library prints on import cannot garble the protocol.
    """
    channel = os.dup(1)
    os.dup2(2, 1)
    replies = os.fdopen(channel, "w", buffering=1)
    become_subreaper()  # ranks' orphans come back here, to be stopped when their launch ends
    for name in preload:
        importlib.import_module(name)
    if threading.active_count() != 1:
        names = [t.name for t in threading.enumerate()]
        print(
            json.dumps({"ready": False, "why": f"preloading left threads running: {names}"}), file=replies, flush=True
        )
        return
    print(json.dumps({"ready": True}), file=replies, flush=True)
    for line in sys.stdin:
        if line.strip():
            print(json.dumps(serve_one(json.loads(line), channel)), file=replies, flush=True)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="serve torchrun-style launches from a warm process")
    parser.add_argument("--serve", action="store_true", required=True)
    parser.add_argument("--preload", default="torch")
    args = parser.parse_args(argv)
    here = str(Path(__file__).resolve().parent)
    sys.path[:] = [p for p in sys.path if p and Path(p).resolve() != Path(here)]  # no grader imports
    serve([name for name in args.preload.split(",") if name])


if __name__ == "__main__":
    main()
