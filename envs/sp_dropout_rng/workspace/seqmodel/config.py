"""Run configuration: a TOML file plus ``section.key=value`` overrides from the command line.

``python -m seqmodel.config CONFIG KEY [key=value ...]`` prints one resolved value (the launch
script reads the tensor-parallel size this way).
"""
from __future__ import annotations

import sys
import tomllib
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any


@dataclass
class ParallelConfig:
    tensor_model_parallel_size: int = 2
    sequence_parallel: bool = True


@dataclass
class ModelConfig:
    input_dim: int = 8
    hidden_size: int = 32
    ffn_hidden_size: int = 64
    num_layers: int = 2
    output_dim: int = 4
    hidden_dropout: float = 0.1
    embed_dropout: float = 0.1
    bf16: bool = False


@dataclass
class DataConfig:
    seq_length: int = 16
    batch_size: int = 4
    seed: int = 7


@dataclass
class TrainConfig:
    steps: int = 20
    lr: float = 0.05
    seed: int = 1234
    log_every: int = 1


@dataclass
class Config:
    run_name: str = "run"
    output_dir: str = "outputs"
    parallel: ParallelConfig = field(default_factory=ParallelConfig)
    model: ModelConfig = field(default_factory=ModelConfig)
    data: DataConfig = field(default_factory=DataConfig)
    train: TrainConfig = field(default_factory=TrainConfig)


def _coerce(current: Any, text: str) -> Any:
    if isinstance(current, bool):
        if text.lower() in ("true", "1", "yes"):
            return True
        if text.lower() in ("false", "0", "no"):
            return False
        raise ValueError(f"expected true/false, got {text!r}")
    if isinstance(current, int):
        return int(text)
    if isinstance(current, float):
        return float(text)
    return text


def _assign(cfg: Config, dotted: str, value: Any, from_text: bool) -> None:
    parts = dotted.split(".")
    target: Any = cfg
    for part in parts[:-1]:
        if not hasattr(target, part):
            raise KeyError(f"unknown config section {part!r} in {dotted!r}")
        target = getattr(target, part)
    key = parts[-1]
    if key not in {f.name for f in fields(target)}:
        raise KeyError(f"unknown config key {dotted!r}")
    current = getattr(target, key)
    setattr(target, key, _coerce(current, value) if from_text else type(current)(value))


def load(path: str | Path, overrides: list[str] | None = None) -> Config:
    """The file's values over the defaults, then each ``key=value`` override."""
    cfg = Config()
    raw = tomllib.loads(Path(path).read_text(encoding="utf-8"))
    for key, value in raw.items():
        if isinstance(value, dict):
            for sub, subvalue in value.items():
                _assign(cfg, f"{key}.{sub}", subvalue, from_text=False)
        else:
            _assign(cfg, key, value, from_text=False)
    for item in overrides or []:
        if "=" not in item:
            raise ValueError(f"override {item!r} is not key=value")
        key, value = item.split("=", 1)
        _assign(cfg, key, value, from_text=True)
    return cfg


if __name__ == "__main__":
    config = load(sys.argv[1], sys.argv[3:])
    value: Any = config
    for part in sys.argv[2].split("."):
        value = getattr(value, part)
    print(value)
