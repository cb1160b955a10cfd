"""Supervised fine-tuning of small causal language models with the Hugging Face Trainer."""
