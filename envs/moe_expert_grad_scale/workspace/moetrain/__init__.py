"""Mixture-of-experts surrogate model trained with DeepSpeed expert parallelism."""
