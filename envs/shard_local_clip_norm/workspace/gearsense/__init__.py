"""gearsense: a gearbox vibration-window fault classifier trained with PyTorch FSDP."""
