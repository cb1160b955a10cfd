"""Control arm: the ``traincheck`` package of this runtime is a stand-in, not TrainCheck.

Installed as ``blocked/traincheck/__init__.py`` in the runtime; ``blocked`` is on the episode
sandbox's ``PYTHONPATH``. The blocker loaded at start-up refuses ``traincheck`` before this file
is ever found; only an interpreter that skipped the blocker (``python -S``, a fresh venv) gets
here. Reading this file is itself on record (the host watches it from outside); it also writes
an audit record when the audit channel is open, and fails like the blocker does.
"""

import json
import os
import sys

MESSAGE = (
    "TrainCheck is not available in this evaluation arm (control). "
    "It is not installed and cannot be installed here; work without it."
)


def _report():
    fd = os.environ.get("TRAINFAIL_AUDIT_FD")
    if not fd:
        return
    try:
        record = {"type": "blocked", "kind": "import", "detail": __name__,
                  "argv": [str(a)[:200] for a in sys.argv[:12]], "pid": os.getpid()}
        os.write(int(fd), (json.dumps(record) + "\n").encode())
    except (OSError, ValueError):
        pass


_report()
raise ModuleNotFoundError(MESSAGE, name=__name__)
