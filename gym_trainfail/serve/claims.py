"""One holder per episode: an exclusive claim on a run directory, taken before the env touches it.

A claim is an ``flock`` on the run directory itself (an open descriptor of the folder, no lock
file in it). ``flock`` locks belong to one open file description, so two sessions of one server
(two threads), two servers over one runs root, and a session and a crashed server all exclude
each other, and the kernel drops the lock of a process that dies: a crashed holder leaves
nothing to clean up.

A new episode's folder is made with ``mkdir`` (atomic: of two sessions naming the same new
episode, one makes it) and claimed at once; a resumed episode's folder is claimed before its
``episode.json`` is read. The claim is released after the env closed the episode (its ``finish``
line written, its sandbox and disk area closed), so the next holder starts from a closed episode.

A holder that is closing says so (:meth:`EpisodeClaim.closing`): a claimant in the same process
then waits for the release (a client that reconnects at once to resume the episode its dropped
connection held is not refused while the server closes it) instead of being refused.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import threading
import time
from pathlib import Path

from gym_trainfail.errors import TrainFailError

#: How long the maker of a new episode's folder waits for a claim held by someone who looked in
#: (a resume attempt reads the empty folder, finds no episode and lets go within milliseconds).
_MAKER_WAIT_S = 2.0
#: How long a claimant waits for a holder of this process that is closing the episode (closing
#: copies the workspace out of its disk area and may remove a container).
CLOSING_WAIT_S = 120.0

# Run directories whose holder in this process is closing them, and the event their release sets.
_closing_lock = threading.Lock()
_closing: dict[Path, threading.Event] = {}


class EpisodeBusyError(TrainFailError):
    """The episode is open in another session (of this server or another process)."""


class EpisodeClaim:
    """An exclusive claim on one run directory; :meth:`release` (or process death) lets go."""

    def __init__(self, episode_id: str, run_dir: Path, fd: int) -> None:
        self.episode_id = episode_id
        self.run_dir = run_dir
        self._fd = fd

    @property
    def held(self) -> bool:
        return self._fd >= 0

    def closing(self) -> None:
        """Say the holder is closing the episode: claimants of this process wait for the release."""
        if self.held:
            with _closing_lock:
                _closing.setdefault(self.run_dir, threading.Event())

    def release(self) -> None:
        """Let go of the episode (idempotent)."""
        fd, self._fd = self._fd, -1
        if fd >= 0:
            with contextlib.suppress(OSError):
                os.close(fd)  # closing the only descriptor of the open file drops the flock
            with _closing_lock:
                released = _closing.pop(self.run_dir, None)
            if released is not None:
                released.set()


def busy(episode_id: str) -> EpisodeBusyError:
    return EpisodeBusyError(
        f"episode {episode_id!r} is open in another session; close that session (or wait for it to end) "
        "and resume it again"
    )


def claim_existing(runs_root: Path, episode_id: str, closing_wait_s: float = CLOSING_WAIT_S) -> EpisodeClaim:
    """Claim the run directory of an existing episode; :class:`EpisodeBusyError` if it is held
    (after waiting up to ``closing_wait_s`` for a holder of this process that is closing it)."""
    run_dir = runs_root / episode_id
    for attempt in range(2):
        try:
            # O_NOFOLLOW: an id names a folder under the runs root, never a link out of it.
            fd = os.open(run_dir, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except OSError:
            raise TrainFailError(f"no resumable episode {episode_id!r} on this server") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            with _closing_lock:
                released = _closing.get(run_dir)
            if released is not None and attempt == 0:
                released.wait(closing_wait_s)  # then once more
            elif attempt > 0 or released is not None:
                raise busy(episode_id) from None
            # else: no holder here says it is closing; it may have let go a moment ago: once more
            continue
        except OSError as exc:
            os.close(fd)
            raise TrainFailError(f"cannot claim episode {episode_id!r}: {exc.strerror or exc}") from None
        return EpisodeClaim(episode_id, run_dir, fd)
    raise busy(episode_id)


def claim_new(runs_root: Path, episode_id: str) -> EpisodeClaim:
    """Make and claim the run directory of a new episode; refused if the episode exists."""
    run_dir = runs_root / episode_id
    try:
        runs_root.mkdir(parents=True, exist_ok=True)
        os.mkdir(run_dir, 0o755)
    except FileExistsError:
        raise TrainFailError(
            f"episode {episode_id!r} exists; resume it with reset(resume=...) or pick a new id"
        ) from None
    except OSError as exc:
        raise TrainFailError(f"cannot make episode {episode_id!r} under the runs root: {exc.strerror or exc}") from None
    deadline = time.monotonic() + _MAKER_WAIT_S
    while True:
        try:
            return claim_existing(runs_root, episode_id)
        except EpisodeBusyError:
            if time.monotonic() >= deadline:
                raise
            time.sleep(0.01)


def is_claimed(run_dir: Path) -> bool:
    """Whether some session (any process) holds ``run_dir`` now."""
    try:
        fd = os.open(run_dir, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return True
    finally:
        os.close(fd)
    return False
