"""Judge side of TrainFail/DDPTokenAverage-v0 (private): artifact readers, oracle, optimizer
replay, checks and outcomes."""
