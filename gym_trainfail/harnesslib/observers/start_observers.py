"""Call every observer ``TRAINFAIL_OBSERVERS`` names (``module:function``, comma-separated).

An observer that fails to start must not look like a training failure: the error goes to the
job's log and training goes on; the judge then finds no record and fails the scenario with
that reason (no record, no verdict but fail).
"""

from __future__ import annotations

import importlib
import os
import sys

OBSERVERS_ENV = "TRAINFAIL_OBSERVERS"


def start_from_env() -> None:
    """Start each named observer once in this process."""
    for name in filter(None, (n.strip() for n in os.environ.get(OBSERVERS_ENV, "").split(","))):
        owner, _, function = name.partition(":")
        try:
            getattr(importlib.import_module(owner), function or "install_from_env")()
        except Exception as exc:  # noqa: BLE001 - reported, never raised into the pipeline
            sys.stderr.write(f"[trainfail-observer] {name} not started: {exc!r}\n")
