"""Disk budgets the filesystem enforces: a directory that cannot take more than N bytes of host disk.

A :class:`DiskArea` mounts a filesystem of exactly its budget on a directory (the episode
workspace, a grading scratch folder). Writes past it fail with ``ENOSPC``, inside a sandbox
and on the host alike, so no sandboxed command can make the host's free space drop by more
than the budget. How, in order of preference (:func:`disk_support` probes once):

* ``loop``: a sparse image file of the budget's size next to the directory, formatted ext4
  (no reserved blocks) and loop-mounted ``nosuid,nodev``. The image is the only thing that
  takes host disk, and it never grows past its size. Needs root and loop devices.
* ``tmpfs``: a size-limited tmpfs, where loop devices are missing. It takes memory, not disk.
  Needs root.
* ``none``: a plain directory, where neither can be mounted (not root); :attr:`DiskArea.reason`
  and ``trainfail doctor`` say why. Nothing is enforced then.

A directory that already holds files is taken in: its contents move onto the new filesystem
(a seed larger than the budget is refused). On :meth:`DiskArea.close` an area made with
``keep=True`` copies its contents out into a plain directory at the same path (sparse files
stay sparse, links are copied as links), then unmounts; ``keep=False`` discards them. Either
way the image is deleted and the path is a plain directory again.

Each area has a record under ``$TRAINFAIL_HOME/disk/`` that its process holds locked
(``flock``) while the area lives. The lock dies with the process, so a record nobody holds
belongs to a process that crashed: :func:`reclaim_stale` (run whenever an area is made)
finishes its close for it — copy out if kept, unmount, delete the image.
"""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import functools
import json
import os
import secrets
import shutil
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

from gym_trainfail.errors import SandboxUnavailableError
from gym_trainfail.paths import home
from gym_trainfail.sandbox.base import GiB, Limits

MiB = 1 << 20
#: The smallest area: ext4's journal and metadata need a few MiB.
MIN_BYTES = 16 * MiB
METHODS = ("loop", "tmpfs", "none")
_TOOL_TIMEOUT_S = 120.0
_UMOUNT_TRIES = 5


@dataclass(frozen=True)
class DiskSupport:
    """Which way of bounding a directory works here (``method`` ``none`` when none does, with why)."""

    method: str
    reason: str = ""

    @property
    def enforced(self) -> bool:
        """Whether writes past a budget will fail here."""
        return self.method != "none"

    def describe(self) -> str:
        """One line for ``trainfail doctor``."""
        if self.method == "loop":
            return "enforced: each episode's workspace is an ext4 image of its budget, loop-mounted; /tmp a sized tmpfs"
        if self.method == "tmpfs":
            return f"enforced with a size-limited tmpfs (takes memory, not disk): {self.reason}"
        return f"not enforced (episodes run without a disk budget): {self.reason}"


@dataclass(frozen=True)
class BudgetSplit:
    """How one disk budget is shared: the workspace filesystem and the sandbox's ``/tmp``."""

    workspace_bytes: int
    tmp_bytes: int


def split_budget(total_bytes: int) -> BudgetSplit:
    """A quarter of the budget (at most 1 GiB) for ``/tmp``, the rest for the workspace."""
    tmp = min(total_bytes // 4, GiB)
    return BudgetSplit(workspace_bytes=max(MIN_BYTES, total_bytes - tmp), tmp_bytes=max(MiB, tmp))


def scratch_bytes(limits: Limits) -> int | None:
    """The size of a sandbox's ``/tmp`` tmpfs: ``limits.tmp_bytes``, and at most a quarter of the
    memory limit. A tmpfs is memory: one as large as the limit lets a full ``/tmp`` exhaust it,
    which ends in the OOM killer instead of ``ENOSPC``. ``None``: unbounded."""
    sizes = [s for s in (limits.tmp_bytes, limits.memory_bytes // 4 if limits.memory_bytes else None) if s]
    return min(sizes) if sizes else None


def shm_bytes(limits: Limits) -> int:
    """The size of a sandbox's ``/dev/shm``: half the memory limit, at most 1 GiB."""
    return min(GiB, limits.memory_bytes // 2) if limits.memory_bytes else GiB


def records_dir() -> Path:
    """Where live areas are recorded (one locked JSON file each)."""
    return home() / "disk"


# -- probing -----------------------------------------------------------------------------------


def _run(argv: list[str]) -> None:
    """Run a mount tool; raise ``OSError`` with its message when it fails."""
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=_TOOL_TIMEOUT_S, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise OSError(f"{argv[0]} could not run: {exc}") from None
    if done.returncode != 0:
        raise OSError(f"`{' '.join(argv)}` failed: {(done.stderr or done.stdout).strip()}")


@functools.cache
def disk_support() -> DiskSupport:
    """Probe once which :data:`METHODS` entry works here, by mounting a small area of each kind."""
    if os.geteuid() != 0:
        return DiskSupport("none", "mounting a size-limited filesystem needs root, and this process is not root")
    missing = [tool for tool in ("mount", "umount", "cp") if shutil.which(tool) is None]
    if missing:
        return DiskSupport("none", f"{', '.join(missing)} not found (install util-linux and coreutils)")
    folder = records_dir() / f"probe-{os.getpid()}-{secrets.token_hex(3)}"
    reasons = []
    for method in ("loop", "tmpfs"):
        try:
            folder.mkdir(parents=True)
            try:
                _mount(method, folder / "mnt", folder / "image", MIN_BYTES)
                _unmount(folder / "mnt")
            finally:
                shutil.rmtree(folder, ignore_errors=True)
        except OSError as exc:
            reasons.append(f"{method}: {exc}")
            continue
        return DiskSupport(method, "; ".join(reasons))
    return DiskSupport("none", "no size-limited filesystem can be mounted here (" + "; ".join(reasons) + ")")


# -- mounting ----------------------------------------------------------------------------------


def _mount(method: str, path: Path, image: Path, size_bytes: int) -> None:
    path.mkdir(parents=True, exist_ok=True)
    if method == "tmpfs":
        _run(["mount", "-t", "tmpfs", "-o", f"size={size_bytes},mode=0755,nosuid,nodev", "tmpfs", str(path)])
        return
    if shutil.which("mkfs.ext4") is None:
        raise OSError("mkfs.ext4 not found (install e2fsprogs)")
    with open(image, "xb") as handle:
        handle.truncate(size_bytes)  # sparse: takes disk only as the filesystem fills
    try:
        # No blocks reserved for root (the sandbox may map to host root); the journal is not zeroed:
        # a fresh sparse image reads back zeros anyway, and zeroing would take host disk up front.
        _run(["mkfs.ext4", "-q", "-F", "-m", "0", "-E", "lazy_journal_init=1", str(image)])
        _run(["mount", "-t", "ext4", "-o", "loop,nosuid,nodev,noatime", str(image), str(path)])
    except OSError:
        image.unlink(missing_ok=True)
        raise
    with contextlib.suppress(OSError):
        (path / "lost+found").rmdir()  # the workspace must hold only what its owner puts there


def _mount_points() -> set[str]:
    points = set()
    with contextlib.suppress(OSError):
        for line in Path("/proc/self/mountinfo").read_text().splitlines():
            fields = line.split(" ")
            if len(fields) > 4:
                points.add(_unescape(fields[4]))
    return points


def _unescape(field: str) -> str:
    """Undo mountinfo's octal escapes (space, tab, newline, backslash)."""
    return field.encode().decode("unicode_escape").encode("latin-1").decode(errors="surrogateescape")


def is_mounted(path: Path) -> bool:
    """Whether something is mounted exactly on ``path``."""
    return str(path) in _mount_points()


def _unmount(path: Path) -> None:
    """Unmount ``path``; detach lazily when something still holds it (a container being removed)."""
    for attempt in range(_UMOUNT_TRIES):
        try:
            _run(["umount", str(path)])
            return
        except OSError:
            if not is_mounted(path):
                return
            time.sleep(0.05 * (attempt + 1))
    _run(["umount", "-l", str(path)])


def _copy_tree(source: Path, target: Path) -> None:
    """Copy the contents of ``source`` into ``target`` as they are: links stay links, holes stay holes,
    special files are made again rather than read."""
    _run(["cp", "-a", "--sparse=always", "--", f"{source}/.", str(target)])


# -- one area ----------------------------------------------------------------------------------


class DiskArea:
    """A directory that can hold at most ``size_bytes`` (see the module docstring).

    ``with DiskArea(path, size_bytes) as area:`` mounts it (``path`` is made, or its current
    contents taken in) and closes it at the end. :attr:`enforced` says whether the budget holds
    (``False`` where no filesystem can be mounted: see :attr:`reason`). Raises
    :class:`~gym_trainfail.errors.SandboxUnavailableError` when the seed contents do not fit.
    """

    def __init__(self, path: Path, size_bytes: int, *, keep: bool = False, method: str | None = None) -> None:
        if size_bytes < MIN_BYTES:
            raise ValueError(f"a disk area needs at least {MIN_BYTES >> 20} MiB, not {size_bytes} bytes")
        reclaim_stale()
        path = Path(path)
        self.path = Path(os.path.realpath(path.parent)) / path.name  # as /proc/self/mountinfo names it
        self.size_bytes = size_bytes
        self.keep = keep
        support = disk_support()
        self.method = method or support.method
        self.reason = support.reason
        token = secrets.token_hex(4)
        self.image = self.path.parent / f".{self.path.name}.disk-{token}.img"
        self._seed = self.path.parent / f".{self.path.name}.seed-{token}"
        self._record: _Record | None = None
        self._pid = os.getpid()
        self.closed = False
        if self.method == "none":
            self.path.mkdir(parents=True, exist_ok=True)
            return
        self._record = _Record.create(self)
        try:
            self._open()
        except BaseException:
            self._abandon()
            raise
        _track(self)

    @property
    def enforced(self) -> bool:
        """Whether writes past the budget fail."""
        return self.method != "none"

    def _open(self) -> None:
        seeded = self.path.exists() and any(self.path.iterdir())
        if seeded:
            self.path.rename(self._seed)
        try:
            _mount(self.method, self.path, self.image, self.size_bytes)
        except OSError:
            if seeded:
                with contextlib.suppress(OSError):
                    self.path.rmdir()
                self._seed.rename(self.path)
            raise
        if seeded:
            try:
                _copy_tree(self._seed, self.path)
            except OSError as exc:
                _unmount(self.path)
                self.image.unlink(missing_ok=True)
                self.path.rmdir()
                self._seed.rename(self.path)
                raise SandboxUnavailableError(
                    f"the files in {self.path} do not fit its disk budget of {self.size_bytes >> 20} MiB ({exc}); "
                    "raise the budget (`[budgets] disk_mb` in case.toml, or budgets={'disk_mb': …})"
                ) from None
            shutil.rmtree(self._seed)

    def _abandon(self) -> None:
        """Undo a half-made area (the mount, if any, is left to the next reclaim when it cannot go)."""
        if self._record is not None:
            if not is_mounted(self.path) and not self._seed.exists():
                self.image.unlink(missing_ok=True)
                self._record.remove()
            self._record.release()
            self._record = None

    def usage(self) -> tuple[int, int]:
        """``(used, total)`` bytes of the filesystem under :attr:`path`."""
        stats = os.statvfs(self.path)
        total = stats.f_blocks * stats.f_frsize
        return total - stats.f_bfree * stats.f_frsize, total

    def close(self) -> None:
        """Copy the contents out (``keep=True``) or drop them, unmount, delete the image. Idempotent.

        Raises ``OSError`` if the contents could not be copied out; the area stays mounted then,
        and a later :func:`reclaim_stale` (after this process ends) retries.
        """
        if self.closed:
            return
        self.closed = True
        _untrack(self)
        if self._record is None:
            return
        _release_mount(self.path, self.image, self.keep)
        self._record.remove()
        self._record.release()
        self._record = None

    def __enter__(self) -> DiskArea:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


def _release_mount(path: Path, image: Path, keep: bool) -> None:
    """Empty or copy out ``path``'s filesystem, unmount it, delete its image, leave a plain directory."""
    if is_mounted(path):
        if keep:
            staging = path.parent / f".{path.name}.out-{secrets.token_hex(4)}"
            staging.mkdir()
            try:
                _copy_tree(path, staging)
            except OSError:
                shutil.rmtree(staging, ignore_errors=True)
                raise
            _unmount(path)
            path.rmdir()
            staging.rename(path)
        else:
            _unmount(path)
    image.unlink(missing_ok=True)
    path.mkdir(parents=True, exist_ok=True)


# -- records of live areas, and crash recovery ---------------------------------------------------


@dataclass
class _Record:
    """The locked file that says an area is alive (and how to clean it up when it is not)."""

    file: Path
    fd: int

    @classmethod
    def create(cls, area: DiskArea) -> _Record:
        folder = records_dir()
        folder.mkdir(parents=True, exist_ok=True)
        data = {
            "path": str(area.path),
            "image": str(area.image),
            "seed": str(area._seed),
            "method": area.method,
            "keep": area.keep,
            "pid": os.getpid(),
            "created": time.time(),
        }
        name = f"{time.strftime('%Y%m%d-%H%M%S')}-{secrets.token_hex(4)}"
        partial = folder / f"{name}.partial"
        fd = os.open(partial, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
        fcntl.flock(fd, fcntl.LOCK_EX)  # locked before its name says it is live
        os.write(fd, json.dumps(data).encode())
        final = folder / f"{name}.json"
        os.rename(partial, final)
        return cls(final, fd)

    def remove(self) -> None:
        self.file.unlink(missing_ok=True)

    def release(self) -> None:
        if self.fd >= 0:
            with contextlib.suppress(OSError):
                os.close(self.fd)
            self.fd = -1


def reclaim_stale() -> list[str]:
    """Close the areas of processes that died (their records' locks are free). Returns their paths.

    A kept area's contents are copied out first, as its owner's close would have; one that can
    no longer be copied (an image left by a reboot that cannot be mounted) keeps its image file.
    """
    folder = records_dir()
    reclaimed: list[str] = []
    if not folder.is_dir():
        return reclaimed
    for record in sorted(folder.glob("*.json")):
        try:
            fd = os.open(record, os.O_RDONLY | os.O_CLOEXEC)
        except OSError:
            continue
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                continue  # its owner is alive
            if not record.exists():
                continue  # closed by its owner just before we locked it
            with contextlib.suppress(OSError, ValueError, KeyError):
                _reclaim(json.loads(record.read_text()))
                record.unlink()
                reclaimed.append(str(record))
        finally:
            os.close(fd)
    return reclaimed


def _reclaim(data: dict[str, object]) -> None:
    path, image, seed = Path(str(data["path"])), Path(str(data["image"])), Path(str(data["seed"]))
    keep = bool(data.get("keep"))
    if seed.exists() and not is_mounted(path):  # died while taking the seed in: put it back
        with contextlib.suppress(OSError):
            path.rmdir()
        seed.rename(path)
        image.unlink(missing_ok=True)
        return
    if keep and not is_mounted(path) and image.exists():  # the machine restarted: mount it again to copy out
        try:
            _run(["mount", "-t", "ext4", "-o", "loop,nosuid,nodev,ro", str(image), str(path)])
        except OSError:
            image.rename(image.with_name(f"{path.name}.img"))
            return
    _release_mount(path, image, keep)
    shutil.rmtree(seed, ignore_errors=True)


# -- areas of this process: closed at exit ---------------------------------------------------------

_live: dict[int, DiskArea] = {}
_lock = threading.Lock()
_hook_installed = False


def _track(area: DiskArea) -> None:
    global _hook_installed
    with _lock:
        _live[id(area)] = area
        if not _hook_installed:
            atexit.register(close_all)
            _hook_installed = True


def _untrack(area: DiskArea) -> None:
    with _lock:
        _live.pop(id(area), None)


def release(path: Path) -> None:
    """Close the area this process holds on ``path``, if any (its owner was abandoned: an episode
    being resumed in the same process takes its run directory over)."""
    target = Path(os.path.realpath(Path(path).parent)) / Path(path).name
    with _lock:
        pending = [area for area in _live.values() if area.path == target]
    for area in pending:
        area.close()


def close_all() -> None:
    """Close every area this process still holds (runs at exit; a forked child leaves its parent's alone)."""
    with _lock:
        pending = [area for area in _live.values() if area._pid == os.getpid()]
    for area in pending:
        with contextlib.suppress(Exception):
            area.close()
