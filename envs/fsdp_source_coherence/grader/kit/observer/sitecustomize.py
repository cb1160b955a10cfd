"""Loads the grader's state probe into torchrun workers of the run under test.

Active only when TRAINFAIL_PROBE_DIR is set and the process is a torchrun worker (RANK set),
so the launcher and helper processes start untouched.
"""
from __future__ import annotations

import os

if os.environ.get("TRAINFAIL_PROBE_DIR") and "RANK" in os.environ:
    import trainfail_probe

    trainfail_probe.install()
