"""PID 1 of a gym-trainfail sandbox container: reaps orphans, kills leftovers on request, dies with its host.

Started by the Docker backend as ``python3 -I -S /opt/trainfail/sandbox-init.py`` (no site
hooks), as the sandbox user. Why this shape:

* It runs as the sandbox user, so ``kill(-1, SIGKILL)`` reaches every sandboxed process, and as
  PID 1, which ``kill(-1)`` skips and which ignores signals from inside the container that it
  does not accept (see below): a sandboxed command cannot take it down with its own processes.
* The host talks to it only through signals the engine delivers (``docker kill --signal``).
  Nothing has to start inside the container for that, so it works even when a fork bomb has
  used up the pid limit. Only signals sent from outside the container's pid namespace count:
  those arrive with ``si_pid == 0`` and ``si_code == SI_USER``; a sandboxed process cannot
  forge both.
* It answers on its own stdout, which the host reads through the engine. The process is not
  dumpable, so no sandboxed process can open ``/proc/1/fd/1`` or ptrace it to fake an answer.
* When the host process dies, the host's end of the lifeline FIFO closes; PID 1 sees the
  hang-up, exits, and the engine removes the container (it was created with auto-remove).

Signals from the host: ``SIGUSR1`` kill every other process, empty ``/tmp`` and ``/dev/shm``
(scratch space lives as long as one command, as in the bubblewrap backend) and answer
``reaped N``; ``SIGTERM``/``SIGINT``/``SIGHUP`` exit. Orphans reparented to PID 1 are reaped on
``SIGCHLD``. Standard library only; runs on any Python 3.8+.
"""

import ctypes
import os
import select
import shutil
import signal
import sys
import time

LIFELINE = "/run/trainfail/lifeline"
PR_SET_DUMPABLE = 4
SI_USER = 0
WATCHED = {signal.SIGUSR1, signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGCHLD}
EXIT_SIGNALS = {signal.SIGTERM, signal.SIGINT, signal.SIGHUP}
#: How long one kill sweep may take before it gives up (processes stuck in the kernel).
SWEEP_S = 10.0


def say(line):
    """Write one answer line for the host on stdout (unbuffered)."""
    os.write(1, (line + "\n").encode())


def reap():
    """Collect every exited child (orphans of sandboxed commands are reparented to PID 1)."""
    reaped = 0
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return reaped
        if pid == 0:
            return reaped
        reaped += 1


def kill_all():
    """SIGKILL every process this user may signal (all but PID 1) until none is left."""
    deadline = time.monotonic() + SWEEP_S
    sweeps = 0
    while time.monotonic() < deadline:
        try:
            os.kill(-1, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            break  # nothing left that we may signal
        sweeps += 1
        reap()
        time.sleep(0.001)
    return sweeps, reap()


def clear_scratch(folders=("/tmp", "/dev/shm")):
    """Delete what commands left in the scratch folders (never following links)."""
    for folder in folders:
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue
        for entry in entries:
            try:
                if entry.is_dir(follow_symlinks=False):
                    shutil.rmtree(entry.path, ignore_errors=True)
                else:
                    os.unlink(entry.path)
            except OSError:
                pass


def open_lifeline():
    """The read end of the host's lifeline FIFO, or None when the host gave none."""
    try:
        return os.open(LIFELINE, os.O_RDONLY | os.O_NONBLOCK)
    except OSError:
        return None


def host_gone(poller):
    """True once every writer of the lifeline (the host process) has gone."""
    if poller is None:
        return False
    for _, events in poller.poll(0):
        if events & (select.POLLHUP | select.POLLERR):
            return True
    return False


def main():
    ctypes.CDLL(None).prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)
    signal.pthread_sigmask(signal.SIG_BLOCK, WATCHED)
    lifeline = open_lifeline()
    poller = None
    if lifeline is not None:
        poller = select.poll()
        poller.register(lifeline, select.POLLIN)
    say("ready")
    while True:
        info = signal.sigtimedwait(WATCHED, 0.5)
        if info is None:
            if host_gone(poller):
                return 0
            continue
        if info.si_signo == signal.SIGCHLD:
            reap()
            continue
        if info.si_pid != 0 or info.si_code != SI_USER:
            continue  # sent from inside the container: not the host's
        if info.si_signo in EXIT_SIGNALS:
            return 0
        if info.si_signo == signal.SIGUSR1:
            sweeps, _ = kill_all()
            clear_scratch()
            say("reaped %d" % sweeps)


if __name__ == "__main__":
    sys.exit(main())
