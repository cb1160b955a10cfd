"""Treatment-arm usage tracker: reports when TrainCheck is used, never changes what it does.

Loaded at interpreter start-up from a ``.pth`` file in the runtime's site-packages. It writes
one audit record (``{"type": "usage", ...}``) per use to the file descriptor named by
``TRAINFAIL_AUDIT_FD`` (a pipe the host reads and checks against a closed schema): the first
import of a TrainCheck module in a process, and every run of a ``traincheck-*`` console script
with its arguments. It is the second source: the host also watches TrainCheck's files from
outside the sandbox, which no interpreter flag or environment change can switch off.
"""

import json
import os
import sys

_seen = set()


def _report(kind, detail, argv):
    fd = os.environ.get("TRAINFAIL_AUDIT_FD")
    if not fd:
        return
    try:
        record = {"type": "usage", "kind": kind, "detail": str(detail)[:300],
                  "argv": [str(a)[:200] for a in argv[:12]], "pid": os.getpid()}
        os.write(int(fd), (json.dumps(record) + "\n").encode())
    except (OSError, ValueError):
        pass


def _audit(event, args):
    if event != "import" or not args or not isinstance(args[0], str):
        return
    top = args[0].split(".", 1)[0]
    if top == "traincheck" and top not in _seen:
        _seen.add(top)
        _report("import", args[0], sys.argv)


_script = os.path.basename(sys.argv[0]) if sys.argv and sys.argv[0] else ""
if _script.startswith("traincheck-"):
    _report("command", _script, sys.argv)
    _seen.add("traincheck")  # the command itself is the use; its own imports are not news
sys.addaudithook(_audit)
