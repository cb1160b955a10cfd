"""pulsenet: classifies sensor pulse windows; residual MLP trained with FSDP2 on CPU ranks."""
