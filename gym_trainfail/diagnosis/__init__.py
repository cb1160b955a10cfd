"""How agents get there: diagnosis rubrics, judges, symptom detection, milestones, TrainCheck
engagement and validation scope, all computed after an episode from what the host recorded.

Nothing in this package affects a verdict or a reward; rubrics live in each case's private
``grader/diagnosis/`` folder and never reach an observation.
"""
