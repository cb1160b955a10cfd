"""petite: a small causal language model trained data-parallel with recomputed activations."""
