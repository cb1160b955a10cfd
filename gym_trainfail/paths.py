"""Where gym-trainfail keeps state on the host: runtimes, receipts, device locks, episodes."""

from __future__ import annotations

import os
from pathlib import Path

#: Root of the repository checkout when running from source (editable install or tests).
SOURCE_ROOT = Path(__file__).resolve().parent.parent


def home() -> Path:
    """The state directory: ``$TRAINFAIL_HOME`` or ``~/.cache/gym-trainfail``."""
    env = os.environ.get("TRAINFAIL_HOME")
    base = Path(env).expanduser() if env else Path.home() / ".cache" / "gym-trainfail"
    return base.resolve()


def runtimes_dir() -> Path:
    """Built runtimes, one folder per (arm, content hash)."""
    return home() / "runtimes"


def receipts_dir() -> Path:
    """Grading receipts keyed by (revision tree hash, grader hash)."""
    return home() / "receipts"


def devices_dir() -> Path:
    """Lock files of the node-local device pool."""
    return home() / "devices"


def episodes_dir() -> Path:
    """Default parent of episode run directories made by the library (the CLI takes ``--out``)."""
    return home() / "episodes"


def builtin_cases_dir() -> Path:
    """The in-tree cases: ``envs/`` in a source checkout, a packaged copy otherwise."""
    source = SOURCE_ROOT / "envs"
    if source.is_dir():
        return source
    return Path(__file__).resolve().parent / "_builtin" / "envs"


def containers_dir() -> Path:
    """Runtime requirement sets and Dockerfiles: ``containers/`` or its packaged copy."""
    source = SOURCE_ROOT / "containers"
    if source.is_dir():
        return source
    return Path(__file__).resolve().parent / "_builtin" / "containers"
