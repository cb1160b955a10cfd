"""Tensor-parallel training of the residual MLP surrogate model."""
