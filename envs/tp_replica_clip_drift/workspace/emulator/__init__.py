"""Tensor-parallel bf16 training of the residual MLP emulator."""
