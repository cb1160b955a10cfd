"""Run kit of TrainFail/DDPTokenAverage-v0: scenario requests, data drawing, launch, artifacts.

Everything here is visible to the revision under test; the judge (``grader/tokjudge``) reuses
only the pure helpers (``scenario``, ``datagen``, ``layout``).
"""
