"""Start the grader's observers in a cold-launched training rank (inert elsewhere).

The run kit puts this folder first on the job's ``PYTHONPATH`` and names the observers in
``TRAINFAIL_OBSERVERS`` only in the job's environment; a warm-launched rank calls the same
function (``start_observers.start_from_env``) before the pipeline's module runs.
"""

from __future__ import annotations

import os

if os.environ.get("TRAINFAIL_OBSERVERS"):
    import start_observers

    start_observers.start_from_env()
