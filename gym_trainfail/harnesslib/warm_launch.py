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
"""

from __future__ import annotations

import argparse
import atexit
import contextlib
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
    passes; then its whole process group is killed."""
    started = time.time()
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
            returncode: int | None = proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            returncode = None
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
        """Run ``python -m module args`` on ``nproc`` ranks until they exit or ``timeout_s``.

        ``setup`` (``"module:function"``) is called in each rank once its environment is in
        place and before ``module`` runs: what a ``sitecustomize`` on ``PYTHONPATH`` would do
        at interpreter start-up in a cold launch.
        """
        assert self.proc.stdin is not None
        request = {
            "module": module,
            "args": args,
            "nproc": nproc,
            "cwd": str(cwd),
            "env": env,
            "log": str(log_path),
            "timeout_s": timeout_s,
            "setup": setup,
        }
        self.proc.stdin.write(json.dumps(request) + "\n")
        self.proc.stdin.flush()
        reply = self._reply()
        return Ended(reply["returncode"], float(reply["started"]), float(reply["ended"]))

    def close(self) -> None:
        """Stop the server (and anything it still runs)."""
        if self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
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
    while True:
        done, status = os.waitpid(leader, os.WNOHANG)
        if done:
            return {"returncode": os.waitstatus_to_exitcode(status), "started": started, "ended": time.time()}
        if time.monotonic() > deadline:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(leader, signal.SIGKILL)
            os.waitpid(leader, 0)
            return {"returncode": None, "started": started, "ended": time.time()}
        time.sleep(0.05)


def serve(preload: list[str]) -> None:
    """Import ``preload``, announce readiness, then serve launches until stdin closes.

    Replies go out on the original stdout; the server's own stdout is pointed at its stderr
    first, so that whatever a library prints on import cannot garble the protocol.
    """
    channel = os.dup(1)
    os.dup2(2, 1)
    replies = os.fdopen(channel, "w", buffering=1)
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
