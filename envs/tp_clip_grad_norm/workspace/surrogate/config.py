"""Run settings: a YAML file validated against the pydantic models below.

Every key a run accepts is a field of :class:`RunSettings` or of one of its sections; a key
the models do not know, a value of another type and a feed-forward width the tensor-parallel
size does not divide are refused with pydantic's message before anything starts. Words of the
form ``section.key=value`` after the file override single keys; their values are read as YAML
(``train.lr=0.05`` is a float, ``deepspeed.zero_stage=2`` an integer).

``scripts/launch.sh`` asks this module for the process count::

    python -m surrogate.config configs/tp2.yaml [section.key=value ...] --show parallel.tensor_model_parallel_size
"""
from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, PositiveInt, ValidationError, model_validator


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ParallelSettings(_Section):
    tensor_model_parallel_size: PositiveInt


class ModelSettings(_Section):
    input_dim: PositiveInt
    hidden_size: PositiveInt
    ffn_hidden_size: PositiveInt
    num_layers: PositiveInt
    output_dim: PositiveInt
    init_checkpoint: Path


class DataSettings(_Section):
    path: Path
    batch_size: PositiveInt


class TrainSettings(_Section):
    steps: PositiveInt
    lr: float = Field(gt=0)
    log_interval: PositiveInt


class DeepSpeedSettings(_Section):
    zero_stage: Literal[1, 2]
    gradient_clipping: float = Field(ge=0)


class RunSettings(_Section):
    """One training run: where its outputs go, what it reads, how it trains."""

    run_name: str
    output_dir: Path
    seed: int
    parallel: ParallelSettings
    model: ModelSettings
    data: DataSettings
    train: TrainSettings
    deepspeed: DeepSpeedSettings

    @model_validator(mode="after")
    def _ffn_splits_evenly(self) -> RunSettings:
        tp = self.parallel.tensor_model_parallel_size
        if self.model.ffn_hidden_size % tp:
            raise ValueError(f"model.ffn_hidden_size={self.model.ffn_hidden_size} does not split over {tp} ranks")
        return self

    @property
    def run_dir(self) -> Path:
        return self.output_dir / self.run_name


def _override(tree: dict[str, Any], word: str) -> None:
    key, sep, text = word.partition("=")
    if not sep or not key:
        raise SystemExit(f"override {word!r}: expected section.key=value")
    *sections, leaf = key.split(".")
    node = tree
    for section in sections:
        node = node.setdefault(section, {})
        if not isinstance(node, dict):
            raise SystemExit(f"override {word!r}: {section!r} is a value, not a section")
    node[leaf] = yaml.safe_load(text)


def read_settings(path: str | Path, overrides: Sequence[str] = ()) -> RunSettings:
    """The settings of ``path`` with ``overrides`` applied, validated."""
    tree = yaml.safe_load(Path(path).read_text(encoding="utf-8")) or {}
    for word in overrides:
        _override(tree, word)
    try:
        return RunSettings.model_validate(tree)
    except ValidationError as err:
        raise SystemExit(f"{path}: {err}") from None


def settings_from_command_line(description: str, argv: Sequence[str] | None = None) -> RunSettings:
    """``--config FILE [section.key=value ...]``: the entry points' command line, read and validated."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--config", required=True, type=Path)
    parser.add_argument("overrides", nargs="*", metavar="section.key=value")
    args = parser.parse_args(argv)
    return read_settings(args.config, args.overrides)


def as_yaml(settings: RunSettings) -> str:
    """The resolved settings, in the layout of ``configs/*.yaml``."""
    return yaml.safe_dump(settings.model_dump(mode="json"), sort_keys=False)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="print a resolved setting of a run config")
    parser.add_argument("config")
    parser.add_argument("overrides", nargs="*")
    parser.add_argument("--show", required=True, metavar="SECTION.KEY")
    args = parser.parse_args(argv)
    value: Any = read_settings(args.config, args.overrides).model_dump(mode="json")
    for part in args.show.split("."):
        value = value[part]
    print(value)


if __name__ == "__main__":
    main()
