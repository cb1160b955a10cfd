"""seqmodel: a small sequence regressor trained with tensor and sequence parallelism."""
