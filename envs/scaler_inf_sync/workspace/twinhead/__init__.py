"""twinhead: a two-task tabular regressor trained with FSDP and loss scaling."""
