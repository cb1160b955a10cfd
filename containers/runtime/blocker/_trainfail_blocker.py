"""Control-arm blocker: TrainCheck is not available in this arm.

Loaded at interpreter start-up from a ``.pth`` file in the runtime's site-packages (so it also
holds under ``python -I``, ``-E`` and ``-s``). TrainCheck is not installed in this runtime at
all; this module makes every attempt to reach it fail with a clear message and leaves two
records of the attempt, both out of the sandbox's reach:

* it opens the refusal marker of that kind (``refusals/<kind>`` in the runtime), a file the host
  watches from outside, so the record holds even when the audit channel is closed or unset; a
  process that left itself no free file descriptor (its table filled before the attempt) opens
  the marker from a forked child, which frees descriptors in its own copy of the table first;
* it writes one audit record (``{"type": "blocked", ...}``) to the file descriptor named by
  ``TRAINFAIL_AUDIT_FD``, a pipe the host reads and checks against a closed schema.
"""

import json
import os
import sys

_NAMES = ("traincheck",)
MESSAGE = (
    "TrainCheck is not available in this evaluation arm (control). "
    "It is not installed and cannot be installed here; work without it."
)
# <runtime>/venv/lib/pythonX.Y/site-packages/_trainfail_blocker.py -> <runtime>/refusals
_ROOT = os.path.dirname(os.path.abspath(__file__))
for _ in range(4):
    _ROOT = os.path.dirname(_ROOT)
_REFUSALS = os.path.join(_ROOT, "refusals")


def _is_blocked(name):
    return any(name == n or name.startswith(n + ".") for n in _NAMES)


_reported = set()


def _mark(kind):
    """Open the refusal marker: the host sees the open, whatever this process's environment and
    whatever it left of its descriptor table."""
    path = os.path.join(_REFUSALS, kind)
    try:
        os.close(os.open(path, os.O_RDONLY))
        return
    except OSError:
        pass
    # No descriptor to open with (EMFILE/ENFILE, or anything else): open it from a child, which
    # closes its own copies of the descriptors first. Forking needs no free descriptor.
    try:
        pid = os.fork()
    except OSError:
        return
    if pid == 0:
        try:
            os.closerange(0, 1 << 20)
            os.close(os.open(path, os.O_RDONLY))
        finally:
            os._exit(0)
    while True:
        try:
            os.waitpid(pid, 0)
            return
        except InterruptedError:
            continue
        except OSError:
            return


def _report(kind, detail):
    if (kind, detail) in _reported:
        return
    _reported.add((kind, detail))
    _mark(kind)
    fd = os.environ.get("TRAINFAIL_AUDIT_FD")
    if not fd:
        return
    try:
        record = {"type": "blocked", "kind": kind, "detail": str(detail)[:300],
                  "argv": [str(a)[:200] for a in sys.argv[:12]], "pid": os.getpid()}
        os.write(int(fd), (json.dumps(record) + "\n").encode())
    except (OSError, ValueError):
        pass


class TrainCheckBlocker:
    """Meta-path finder that refuses the blocked top-level packages."""

    @staticmethod
    def find_spec(name, path=None, target=None):
        if _is_blocked(name):
            _report("import", name)
            raise ModuleNotFoundError(MESSAGE, name=name)
        return None

    @staticmethod
    def invalidate_caches():
        return None


def _audit(event, args):
    # Audit hooks cannot be removed from Python code, unlike meta-path entries.
    if event == "import" and args and isinstance(args[0], str) and _is_blocked(args[0]):
        _report("import", args[0])
        raise ModuleNotFoundError(MESSAGE, name=args[0])
    if event == "open" and args:
        path = args[0]
        if isinstance(path, bytes):
            path = path.decode("utf-8", "surrogateescape")
        if isinstance(path, str) and "traincheck" in path.lower():
            for part in path.replace("\\", "/").split("/"):
                if part.split(".", 1)[0].lower() in _NAMES or part.lower().startswith("traincheck-"):
                    _report("open", path)
                    raise PermissionError(13, MESSAGE, path)


if not getattr(sys, "_trainfail_blocker_active", False):
    sys.meta_path.insert(0, TrainCheckBlocker)
    sys.addaudithook(_audit)
    sys._trainfail_blocker_active = True
