"""Model construction from an architecture config (no pretrained weights needed)."""

from __future__ import annotations

from pathlib import Path

from transformers import AutoConfig, AutoModelForCausalLM, PreTrainedModel


def build_model(config_path: str | Path) -> PreTrainedModel:
    """Build a randomly initialised causal LM from a JSON architecture config."""
    config = AutoConfig.from_pretrained(config_path)
    model: PreTrainedModel = AutoModelForCausalLM.from_config(config)
    # from_config leaves the mode to the caller; every rank must agree on it.
    model.train()
    return model
