"""Run options: a TOML file of sections, then ``--set section.key=value`` overrides.

Every option has a default in ``DEFAULTS`` and keeps its default's type; an option that is not
listed there is refused, so a misspelt key never passes silently.
"""
from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

#: Every option: (name, default, what it sets). The default's type is the option's type.
OPTIONS: list[tuple[str, Any, str]] = [
    ("run.name", "switch2", "outputs go to <run.output_dir>/<run.name>/"),
    ("run.output_dir", "outputs", "parent folder of the run folders"),
    ("synth.seed", 7, "seed of switchyard.synth: corpus and initial weights"),
    ("synth.documents", 96, "documents in the synthetic corpus"),
    ("synth.min_length", 6, "shortest synthetic document, in tokens"),
    ("synth.max_length", 22, "longest synthetic document, in tokens"),
    ("model.input_dim", 12, "token features"),
    ("model.hidden_size", 16, "width of h"),
    ("model.ffn_hidden_size", 32, "hidden width of every expert"),
    ("model.output_dim", 3, "target values per token"),
    ("moe.num_experts", 4, "experts in the MoE block"),
    ("moe.top_k", 1, "experts per token: 1 or 2"),
    ("moe.slab_rows", 8, "rows of each expert's block per all-to-all transfer"),
    ("parallel.expert_parallel_size", 2, "ranks the experts are spread over"),
    ("data.corpus", "data/corpus.pt", "corpus file"),
    ("data.docs_per_step", 8, "documents per step over all ranks"),
    ("init.checkpoint", "checkpoints/init.pt", "initial weight file"),
    ("train.steps", 6, "SGD steps"),
    ("train.lr", 0.1, "learning rate"),
    ("train.log_every", 1, "console line period"),
]
DEFAULTS: dict[str, Any] = {name: default for name, default, _ in OPTIONS}


class Options(dict):
    """Flat ``section.key`` -> value mapping (read it like a dict)."""

    def section(self, name: str) -> dict[str, Any]:
        """The options of one section, without the prefix."""
        prefix = name + "."
        return {k[len(prefix):]: v for k, v in self.items() if k.startswith(prefix)}


def _flatten(table: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    flat: dict[str, Any] = {}
    for key, value in table.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            flat.update(_flatten(value, name + "."))
        else:
            flat[name] = value
    return flat


def _coerce(name: str, value: Any) -> Any:
    want = type(DEFAULTS[name])
    if want is bool:
        if isinstance(value, str):
            if value.lower() not in ("true", "false"):
                raise ValueError(f"{name}: expected true or false, got {value!r}")
            return value.lower() == "true"
        return bool(value)
    if want is float and isinstance(value, int):
        return float(value)
    if isinstance(value, want):
        return value
    if isinstance(value, str):
        return want(value)
    raise ValueError(f"{name}: expected {want.__name__}, got {value!r}")


def load(path: str | Path | None, overrides: list[str]) -> Options:
    """Defaults, then the TOML file, then ``key=value`` overrides, each checked against DEFAULTS."""
    opts = Options(DEFAULTS)
    layers: list[tuple[str, Any]] = []
    if path is not None:
        with open(path, "rb") as fh:
            layers += list(_flatten(tomllib.load(fh)).items())
    for item in overrides:
        if "=" not in item:
            raise ValueError(f"override {item!r} is not key=value")
        key, value = item.split("=", 1)
        layers.append((key.strip(), value.strip()))
    for key, value in layers:
        if key not in DEFAULTS:
            raise ValueError(f"unknown option {key!r}; known: {', '.join(sorted(DEFAULTS))}")
        opts[key] = _coerce(key, value)
    return opts
