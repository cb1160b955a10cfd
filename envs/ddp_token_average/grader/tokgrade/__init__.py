"""Private grader of TrainFail/DDPTokenAverage-v0: scenario data, launch, oracle, verdict."""
