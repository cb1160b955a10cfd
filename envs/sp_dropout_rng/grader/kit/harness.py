"""Finding the gym's harness library (``/harnesslib`` in grading sandboxes).

Outside the gym, point ``$TRAINFAIL_HARNESSLIB`` at ``gym_trainfail/harnesslib``; a run from a
clone of the gym repository finds it on its own.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path


def candidates() -> list[Path]:
    """``$TRAINFAIL_HARNESSLIB``, the gym's mount point, then the gym clone this kit sits in."""
    found = [Path(p) for p in [os.environ.get("TRAINFAIL_HARNESSLIB", "")] if p]
    found.append(Path("/harnesslib"))
    here = Path(__file__).resolve()
    if len(here.parents) > 4:  # <repo>/envs/sp_dropout_rng/grader/kit/harness.py
        found.append(here.parents[4] / "gym_trainfail" / "harnesslib")
    return found


def add_to_path() -> Path:
    """Put the first folder that holds the harness library on ``sys.path``; that folder."""
    for folder in candidates():
        if (folder / "warm_launch.py").is_file():
            if str(folder) not in sys.path:
                sys.path.append(str(folder))
            return folder
    raise RuntimeError("harness library not found: set TRAINFAIL_HARNESSLIB to gym_trainfail/harnesslib")
