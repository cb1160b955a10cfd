"""Run settings: `configs/finetune.yaml`, then `section.key=value` overrides from the command line.

Every setting is a typed field of one of the section classes below. The YAML file fills them;
an override is converted to the field's declared type (`train.steps=5` is an int,
`cache.node_local=no` a bool, `train.betas=0.9,0.99` a pair of floats), so a typo in a key or a
value that does not fit its field stops the run before any rank loads a checkpoint.
"""
from __future__ import annotations

import typing
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

import yaml

_TRUE, _FALSE = {"1", "true", "yes", "on"}, {"0", "false", "no", "off"}


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
    betas: tuple[float, float] = (0.9, 0.95)
    eps: float = 1.0e-8
    weight_decay: float = 0.1


@dataclass
class OutputConfig:
    """Where metrics and the final weights go."""

    dir: str = "outputs/dev"
    save_final: bool = True


@dataclass
class Config:
    """The whole run configuration, one attribute per YAML section."""

    model: ModelConfig = field(default_factory=ModelConfig)
    cache: CacheConfig = field(default_factory=CacheConfig)
    train: TrainConfig = field(default_factory=TrainConfig)
    output: OutputConfig = field(default_factory=OutputConfig)


def coerce(kind: Any, value: Any, where: str) -> Any:
    """`value` (from YAML or the command line) as the declared type `kind`."""
    if kind is bool:
        text = str(value).strip().lower()
        if text not in _TRUE | _FALSE:
            raise ValueError(f"{where}: expected true or false, got {value!r}")
        return text in _TRUE
    if typing.get_origin(kind) is tuple:
        items = value if isinstance(value, (list, tuple)) else str(value).strip("[]() ").split(",")
        args = typing.get_args(kind)
        if len(items) != len(args):
            raise ValueError(f"{where}: expected {len(args)} comma-separated values, got {value!r}")
        return tuple(coerce(arg, item, where) for arg, item in zip(args, items))
    try:
        return kind(str(value).strip()) if kind in (int, float) else str(value)
    except ValueError:
        raise ValueError(f"{where}: expected {kind.__name__}, got {value!r}") from None


def _section(cls: type, values: dict[str, Any], name: str) -> Any:
    """One section from its YAML table; every key must be a field of the section."""
    hints = typing.get_type_hints(cls)
    known = {f.name for f in fields(cls)}
    if unknown := sorted(set(values) - known):
        raise KeyError(f"unknown {name} settings {unknown}; {name} has {sorted(known)}")
    return cls(**{key: coerce(hints[key], value, f"{name}.{key}") for key, value in values.items()})


def load_config(path: str | Path, overrides: list[str] | None = None) -> Config:
    """The YAML file at `path` with each `section.key=value` override applied in order."""
    tree: dict[str, dict[str, Any]] = yaml.safe_load(Path(path).read_text()) or {}
    for override in overrides or []:
        key, sep, value = override.partition("=")
        section, dot, leaf = key.partition(".")
        if not (sep and dot and leaf):
            raise ValueError(f"an override looks like section.key=value, got {override!r}")
        tree.setdefault(section, {})[leaf] = value
    sections = typing.get_type_hints(Config)
    if unknown := sorted(set(tree) - set(sections)):
        raise KeyError(f"unknown config sections {unknown}; expected {sorted(sections)}")
    return Config(**{name: _section(sections[name], tree.get(name) or {}, name) for name in sections})
