"""Support code for case harnesses, mounted read-only at ``/harnesslib`` in grading sandboxes.

Modules here run inside the case runtime, not in the gym: they use the standard library only
and never import ``gym_trainfail``. A harness imports them with
``sys.path.insert(0, "/harnesslib")`` (outside the gym, put this folder on ``PYTHONPATH``).
Their content is part of every grader hash, so changing them voids stored receipts (and the
harness digest of every admission record).

* ``warm_launch``: torchrun-style launches from a warm server, and the one-scenario cold launch;
* ``determinism``: the deterministic GPU switches a rank turns on;
* ``protocol``: scenario requests and their names; ``artifacts``: bounded readers of what a run
  left behind;
* ``runkit`` and ``judgekit``: the run phase's and the judge phase's scaffolding a case's
  ``kit/run.py`` and ``judge.py`` build on.
"""
