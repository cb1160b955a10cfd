"""Support code for case harnesses, mounted read-only at ``/harnesslib`` in grading sandboxes.

Modules here run inside the case runtime, not in the gym: they use the standard library only
and never import ``gym_trainfail``. A harness imports them with
``sys.path.insert(0, "/harnesslib")`` (outside the gym, put this folder on ``PYTHONPATH``).
Their content is part of every grader hash, so changing them voids stored receipts.
"""
