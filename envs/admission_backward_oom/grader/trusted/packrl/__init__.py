"""packrl: the team's packed-batch RL trainer rank (model, vocabulary head, admission planner)."""
