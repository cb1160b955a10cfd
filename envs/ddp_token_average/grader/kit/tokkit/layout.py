"""Where the run phase leaves a scenario's artifacts (``OUT/<scenario>/``), for both phases.

The judge reads nothing else from a scenario's folder and trusts none of it.
"""

from __future__ import annotations

#: Folder of the observer's per-rank records, ``rank<R>.pt``.
RECORDS_DIR = "records"
#: The model the pipeline saved (``trainer.save_model()``), copied from its output directory.
MODEL_FILE = "model.safetensors"
#: The end of the job's combined output.
LOG_FILE = "train.log"
#: How the launch ended: ``returncode`` (null when killed at the time limit), ``launcher``,
#: ``error`` (the run kit's own failure, if any).
JOB_FILE = "job.json"
#: Wall-clock marks of the run phase (epoch seconds and durations).
TIMINGS_FILE = "timings.json"

#: The most of the job log that is kept (its end).
LOG_LIMIT_BYTES = 200 * 1024


def rank_record_name(rank: int) -> str:
    """File name of one rank's observer record."""
    return f"rank{rank}.pt"
