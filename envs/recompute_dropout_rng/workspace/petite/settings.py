"""Run settings: a TOML file plus ``section.key=value`` overrides from the command line."""
from __future__ import annotations

import argparse
import tomllib
from dataclasses import dataclass, field, fields, is_dataclass
from typing import Any


@dataclass
class ModelSettings:
    vocab_size: int = 64
    seq_len: int = 16
    d_model: int = 32
    n_heads: int = 2
    n_layers: int = 4
    embd_dropout: float = 0.1
    attn_dropout: float = 0.1
    resid_dropout: float = 0.1


@dataclass
class RematSettings:
    mode: str = "blocks"
    segments: int = 2
    use_reentrant: bool = False


@dataclass
class TrainSettings:
    seed: int = 1234
    steps: int = 200
    batch_size: int = 4
    lr: float = 0.3
    deterministic: bool = False
    log_every: int = 10
    output_dir: str = "outputs/small"


@dataclass
class DataSettings:
    path: str = "data/corpus.jsonl"


@dataclass
class Settings:
    model: ModelSettings = field(default_factory=ModelSettings)
    remat: RematSettings = field(default_factory=RematSettings)
    train: TrainSettings = field(default_factory=TrainSettings)
    data: DataSettings = field(default_factory=DataSettings)


def _coerce(text: str, kind: type) -> Any:
    if kind is bool:
        if text.lower() not in ("true", "false", "1", "0"):
            raise ValueError(f"not a boolean: {text!r}")
        return text.lower() in ("true", "1")
    return kind(text)


def _apply(section: Any, values: dict[str, Any], where: str) -> None:
    known = {f.name: f for f in fields(section)}
    for key, value in values.items():
        if key not in known:
            raise KeyError(f"unknown setting {where}.{key}")
        setattr(section, key, value)


def load(path: str, overrides: list[str]) -> Settings:
    settings = Settings()
    with open(path, "rb") as fh:
        raw = tomllib.load(fh)
    for name, values in raw.items():
        section = getattr(settings, name, None)
        if not is_dataclass(section):
            raise KeyError(f"unknown section [{name}] in {path}")
        _apply(section, values, name)
    for item in overrides:
        key, sep, text = item.partition("=")
        name, dot, leaf = key.partition(".")
        section = getattr(settings, name, None)
        if not sep or not dot or not is_dataclass(section):
            raise ValueError(f"overrides look like section.key=value, got {item!r}")
        kind = {f.name: f.type for f in fields(section)}.get(leaf)
        if kind is None:
            raise KeyError(f"unknown setting {key}")
        kind = {"int": int, "float": float, "bool": bool, "str": str}[kind] if isinstance(kind, str) else kind
        setattr(section, leaf, _coerce(text, kind))
    if settings.remat.mode not in ("off", "blocks", "segments"):
        raise ValueError(f"remat.mode must be off, blocks or segments, got {settings.remat.mode!r}")
    return settings


def parse_args(argv: list[str] | None = None) -> Settings:
    parser = argparse.ArgumentParser(description="train a petite language model")
    parser.add_argument("--config", required=True)
    parser.add_argument("overrides", nargs="*", help="section.key=value")
    args = parser.parse_args(argv)
    return load(args.config, args.overrides)
