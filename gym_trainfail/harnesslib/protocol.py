"""What both phases of a case's grader read from the gym: scenario requests and their names.

``/io/scenarios.json`` is a JSON list of objects (``name``, ``kind``, ``devices``,
``timeout_s``, ``backend``, ``params``; see ``docs/grader-protocol.md``). A scenario's name
becomes a file and folder name on both sides, so it must be a plain one. Standard library only.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

#: Scenario names become file and folder names on both sides.
NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")


def read_requests(path: Path) -> list[dict[str, Any]]:
    """The scenario requests of ``scenarios.json`` (a JSON list of objects)."""
    raw = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(raw, list) or not all(isinstance(r, dict) for r in raw):
        raise ValueError(f"{path}: expected a JSON list of scenario objects")
    return raw
