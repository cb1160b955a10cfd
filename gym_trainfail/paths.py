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


#: Where a built wheel carries the in-tree data (``envs/``, ``containers/``): package data
#: copied in at build time by ``setup.py`` (never present in a source checkout).
PACKAGED_DATA = Path(__file__).resolve().parent / "_builtin"


def _data_dir(name: str) -> Path:
    """``name`` (``envs`` or ``containers``): the installed package's copy when it has one (a
    wheel install), else the checkout's folder (editable install, tests, the image builder)."""
    packaged = PACKAGED_DATA / name
    if packaged.is_dir():
        return packaged
    return SOURCE_ROOT / name


def builtin_cases_dir() -> Path:
    """The in-tree cases: the packaged copy in an installed wheel, ``envs/`` in a checkout."""
    return _data_dir("envs")


def containers_dir() -> Path:
    """Runtime requirement sets, locks and Dockerfiles: the packaged copy or ``containers/``."""
    return _data_dir("containers")
