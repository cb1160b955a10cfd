"""Run settings: a YAML file read as one flat table of dotted names, plus ``name=value`` overrides.

``SCHEMA`` lists every setting a run has and its type. The YAML file must give exactly those
(nested sections spell the dotted names: ``train: {steps: 40}`` is ``train.steps``); an
override must name one of them and is converted to its type (``train.steps=4`` is an int).
An unknown or missing name is an error that lists the known ones.

    python -m gaitnet.settings configs/ddp.yaml launch.nproc_per_node [name=value ...]

prints one resolved setting (``scripts/launch.sh`` reads the process count this way).
"""
from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

import yaml

SCHEMA: dict[str, type] = {
    "run_name": str,
    "output_dir": str,
    "seed": int,
    "launch.nproc_per_node": int,
    "model.input_dim": int,
    "model.hidden_size": int,
    "model.embed_dim": int,
    "model.num_classes": int,
    "model.init_checkpoint": str,
    "data.path": str,
    "data.global_batch_size": int,
    "train.steps": int,
    "train.lr": float,
    "train.consistency_weight": float,
    "train.log_interval": int,
}


class Settings(Mapping[str, Any]):
    """A resolved, read-only table of settings keyed by dotted name."""

    def __init__(self, values: Mapping[str, Any]) -> None:
        missing = [name for name in SCHEMA if name not in values]
        unknown = [name for name in values if name not in SCHEMA]
        if missing or unknown:
            raise KeyError(f"settings: missing {missing}, unknown {unknown}; known: {', '.join(SCHEMA)}")
        self._values = {name: _typed(name, values[name]) for name in SCHEMA}

    def __getitem__(self, name: str) -> Any:
        return self._values[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def section(self, prefix: str) -> dict[str, Any]:
        """``{"steps": 40, ...}`` for ``prefix="train"``."""
        return {name[len(prefix) + 1:]: value for name, value in self._values.items() if name.startswith(prefix + ".")}

    def overridden(self, words: Iterable[str]) -> Settings:
        """A copy with ``name=value`` words applied in order."""
        values = dict(self._values)
        for word in words:
            name, sep, text = word.partition("=")
            if not sep or name not in SCHEMA:
                raise KeyError(f"override {word!r}: expected NAME=VALUE with NAME one of {', '.join(SCHEMA)}")
            values[name] = text
        return Settings(values)

    def as_yaml(self) -> str:
        """The settings nested back into sections, as the config files write them."""
        tree: dict[str, Any] = {}
        for name, value in self._values.items():
            *sections, leaf = name.split(".")
            node = tree
            for section in sections:
                node = node.setdefault(section, {})
            node[leaf] = value
        return yaml.safe_dump(tree, sort_keys=False)


def _typed(name: str, value: Any) -> Any:
    kind = SCHEMA[name]
    try:
        if isinstance(value, str) and kind is not str:
            value = kind(value)  # command-line text: "4", "1e-1", "0.5"
        elif kind is float and isinstance(value, int) and not isinstance(value, bool):
            value = float(value)
    except ValueError:
        raise TypeError(f"setting {name}: expected {kind.__name__}, got {value!r}") from None
    if not isinstance(value, kind) or isinstance(value, bool):
        raise TypeError(f"setting {name}: expected {kind.__name__}, got {value!r}")
    return value


def _flat(tree: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in tree.items():
        name = f"{prefix}{key}"
        out.update(_flat(value, name + ".") if isinstance(value, Mapping) else {name: value})
    return out


def read_settings(path: str | Path, overrides: Iterable[str] = ()) -> Settings:
    """The settings of a YAML file, with ``name=value`` overrides applied."""
    tree = yaml.safe_load(Path(path).read_text(encoding="utf-8")) or {}
    return Settings(_flat(tree)).overridden(overrides)


if __name__ == "__main__":
    if len(sys.argv) < 3:
        raise SystemExit("usage: python -m gaitnet.settings CONFIG NAME [name=value ...]")
    print(read_settings(sys.argv[1], sys.argv[3:])[sys.argv[2]])
