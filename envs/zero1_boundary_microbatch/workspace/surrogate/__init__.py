"""Data-parallel bf16 training of a small surrogate network for a simulator (DeepSpeed ZeRO stage 1)."""
