"""Start the optimizer-step observer in processes the grader launches.

Inert unless ``TRAINFAIL_OBSERVE_DIR`` is set; the run kit sets it only for the training job.
"""

from __future__ import annotations

import os
import sys

if os.environ.get("TRAINFAIL_OBSERVE_DIR"):
    try:
        import step_observer

        step_observer.install_from_env()
    except Exception as exc:  # an observer failure must not look like a training failure
        sys.stderr.write(f"[trainfail-observer] not installed: {exc!r}\n")
