"""relaylm: a small tied-embedding language model trained with pipeline and data parallelism."""
