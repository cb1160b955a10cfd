"""Typed run options: a ``configs/*.yaml`` file read into frozen dataclasses.

Every section of the YAML file is one dataclass below, and every field must be present. On the
command line, ``section.field=value`` words (``train.steps=3``, ``precision.bf16=false``)
replace single fields; each value is converted to the field's declared type, and a name that
is not a field is refused with the names that are, so a typo never trains on a default.

Print one resolved field (``scripts/launch.sh`` reads the process count this way)::

    python -m surrogate.options configs/dp2.yaml [section.field=value ...] --get parallel.data_parallel_size
"""
from __future__ import annotations

import argparse
import dataclasses
import typing
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml


@dataclass(frozen=True)
class Parallel:
    #: processes ``scripts/launch.sh`` starts; training itself counts the ranks torchrun started
    data_parallel_size: int


@dataclass(frozen=True)
class ModelShape:
    input_dim: int
    hidden_size: int
    num_layers: int
    output_dim: int
    init_checkpoint: str


@dataclass(frozen=True)
class DataSplit:
    path: str
    micro_batch_size: int
    gradient_accumulation_steps: int


@dataclass(frozen=True)
class Schedule:
    steps: int
    lr: float
    log_interval: int


@dataclass(frozen=True)
class Precision:
    bf16: bool
    grad_accum_dtype: str


@dataclass(frozen=True)
class ZeroSettings:
    zero_stage: int
    gradient_clipping: float


@dataclass(frozen=True)
class Options:
    run_name: str
    output_dir: str
    seed: int
    parallel: Parallel
    model: ModelShape
    data: DataSplit
    train: Schedule
    precision: Precision
    deepspeed: ZeroSettings

    @property
    def run_dir(self) -> Path:
        """Where this run writes its outputs."""
        return Path(self.output_dir) / self.run_name

    def to_yaml(self) -> str:
        """The resolved options, in the layout of the config files."""
        return yaml.safe_dump(dataclasses.asdict(self), sort_keys=False)


_TRUE, _FALSE = {"true", "yes", "on", "1"}, {"false", "no", "off", "0"}


def _convert(kind: Any, value: Any, where: str) -> Any:
    """``value`` (from YAML, or a command-line string) as the declared type ``kind``."""
    if kind is bool:
        text = str(value).strip().lower()
        if isinstance(value, bool) or text in _TRUE | _FALSE:
            return value if isinstance(value, bool) else text in _TRUE
        raise ValueError(f"{where}: expected true or false, got {value!r}")
    try:
        return kind(value)
    except (TypeError, ValueError):
        raise ValueError(f"{where}: expected {kind.__name__}, got {value!r}") from None


def _build(cls: type, table: Any, where: str) -> Any:
    """An instance of the dataclass ``cls`` from a YAML mapping (every field, nothing else)."""
    if not isinstance(table, dict):
        raise ValueError(f"{where or 'the config'}: expected a mapping")
    hints = typing.get_type_hints(cls)
    names = [f.name for f in dataclasses.fields(cls)]
    unknown, missing = sorted(set(table) - set(names)), [n for n in names if n not in table]
    if unknown or missing:
        raise ValueError(f"{where or 'the config'}: unknown {unknown}, missing {missing}")
    values = {}
    for name in names:
        label = f"{where}.{name}" if where else name
        kind = hints[name]
        nested = dataclasses.is_dataclass(kind)
        values[name] = _build(kind, table[name], label) if nested else _convert(kind, table[name], label)
    return cls(**values)


def _replace(node: Any, path: list[str], text: str, name: str) -> Any:
    """``node`` with the field at ``path`` set from ``text``."""
    fields = {f.name for f in dataclasses.fields(node)}
    if path[0] not in fields:
        raise ValueError(f"{name}: no such option; {type(node).__name__} has {sorted(fields)}")
    current = getattr(node, path[0])
    if len(path) > 1:
        if not dataclasses.is_dataclass(current):
            raise ValueError(f"{name}: {path[0]} has no sub-options")
        return dataclasses.replace(node, **{path[0]: _replace(current, path[1:], text, name)})
    if dataclasses.is_dataclass(current):
        raise ValueError(f"{name}: a whole section cannot be set from the command line")
    kind = typing.get_type_hints(type(node))[path[0]]
    return dataclasses.replace(node, **{path[0]: _convert(kind, text, name)})


def load_options(path: str | Path, overrides: typing.Sequence[str] = ()) -> Options:
    """The YAML file at ``path`` with ``section.field=value`` overrides applied in order."""
    options = _build(Options, yaml.safe_load(Path(path).read_text(encoding="utf-8")), "")
    for word in overrides:
        name, sep, text = word.partition("=")
        if not sep:
            raise ValueError(f"{word!r}: expected section.field=value")
        options = _replace(options, name.split("."), text, name)
    return options


def main() -> None:
    """``CONFIG [section.field=value ...] --get section.field``: print one resolved option."""
    parser = argparse.ArgumentParser(description="print one resolved option")
    parser.add_argument("config")
    parser.add_argument("overrides", nargs="*")
    parser.add_argument("--get", required=True, metavar="SECTION.FIELD")
    args = parser.parse_args()
    value: Any = load_options(args.config, args.overrides)
    for part in args.get.split("."):
        value = getattr(value, part)
    print(value)


if __name__ == "__main__":
    main()
