"""Run configuration: a YAML file plus `section.key=value` command-line overrides."""
from __future__ import annotations

from dataclasses import dataclass, field, fields, is_dataclass
from pathlib import Path
from typing import Any

import yaml


@dataclass
class ModelConfig:
    """Which base checkpoint to start from."""

    repo_id: str = "lumen-labs/pythia-14m-base"
    revision: str = "main"
    hidden_dropout: float = 0.1
    attention_dropout: float = 0.1


@dataclass
class CacheConfig:
    """Where checkpoints are read from: the shared mirror and the node-local copies."""

    mirror: str = ".cache/hub-mirror"
    node_local: bool = True
    node_root: str = ".cache/nodes"
    ranks_per_node: int = 1


@dataclass
class TrainConfig:
    """Optimisation settings; the batch size is per rank."""

    steps: int = 20
    seed: int = 1234
    micro_batch_size: int = 2
    seq_len: int = 64
    lr: float = 3.0e-4
    betas: list[float] = field(default_factory=lambda: [0.9, 0.95])
    eps: float = 1.0e-8
    weight_decay: float = 0.1


@dataclass
class OutputConfig:
    """Where metrics and the final weights go."""

    dir: str = "outputs/dev"
    save_final: bool = True


@dataclass
class Config:
    """The whole run configuration."""

    model: ModelConfig = field(default_factory=ModelConfig)
    cache: CacheConfig = field(default_factory=CacheConfig)
    train: TrainConfig = field(default_factory=TrainConfig)
    output: OutputConfig = field(default_factory=OutputConfig)


def _build(cls: type, values: dict[str, Any]) -> Any:
    """Instantiate a (nested) config dataclass from a plain mapping, rejecting unknown keys."""
    known = {f.name: f for f in fields(cls)}
    unknown = set(values) - set(known)
    if unknown:
        raise KeyError(f"unknown {cls.__name__} keys: {sorted(unknown)}")
    kwargs: dict[str, Any] = {}
    for name, value in values.items():
        sub = getattr(cls(), name)
        kwargs[name] = _build(type(sub), value) if is_dataclass(sub) else value
    return cls(**kwargs)


def _apply_override(tree: dict[str, Any], override: str) -> None:
    """Apply one `a.b=value` override; the value is parsed as YAML (numbers, bools, lists)."""
    key, sep, raw = override.partition("=")
    if not sep:
        raise ValueError(f"override must look like section.key=value, got {override!r}")
    *parents, leaf = key.split(".")
    node = tree
    for part in parents:
        node = node.setdefault(part, {})
    node[leaf] = yaml.safe_load(raw)


def load_config(path: str | Path, overrides: list[str] | None = None) -> Config:
    """Read the YAML config at `path` and apply command-line overrides in order."""
    tree = yaml.safe_load(Path(path).read_text()) or {}
    for override in overrides or []:
        _apply_override(tree, override)
    return _build(Config, tree)
