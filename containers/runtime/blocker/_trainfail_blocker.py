"""Control-arm blocker: TrainCheck is not available in this arm.

Loaded at interpreter start-up from a ``.pth`` file in the runtime's site-packages (so it also
holds under ``python -I``, ``-E`` and ``-s``). TrainCheck is not installed in this runtime at
all; this module makes every attempt to reach it fail with a clear message, and reports the
attempt on the file descriptor named by ``TRAINFAIL_AUDIT_FD`` (a pipe the host reads, so the
record is out of the sandbox's reach).
"""

import json
import os
import sys

_NAMES = ("traincheck",)
MESSAGE = (
    "TrainCheck is not available in this evaluation arm (control). "
    "It is not installed and cannot be installed here; work without it."
)


def _is_blocked(name):
    return any(name == n or name.startswith(n + ".") for n in _NAMES)


_reported = set()


def _report(kind, detail):
    fd = os.environ.get("TRAINFAIL_AUDIT_FD")
    if not fd or (kind, detail) in _reported:
        return
    _reported.add((kind, detail))
    try:
        line = json.dumps({"event": "blocked", "kind": kind, "detail": str(detail)[:300],
                           "argv": sys.argv[:6], "pid": os.getpid()}) + "\n"
        os.write(int(fd), line.encode())
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
