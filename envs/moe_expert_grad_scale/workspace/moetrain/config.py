"""Run settings: a YAML file checked against ``SCHEMA``, then ``dotted.key=value`` words.

``SCHEMA`` has the shape of ``configs/*.yaml`` with a type where the file has a value. A
section or key that the schema does not have, one the file leaves out, or a value that does not
read as its type stops the run with the key's dotted name, so a typo never trains with a
default. The program reads a setting by its dotted name: ``settings["train.lr"]``.

    python -m moetrain.config configs/ep2.yaml parallel.expert_parallel_size [key=value ...]
"""
from __future__ import annotations

import contextlib
import functools
import operator
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import yaml

SCHEMA: dict[str, Any] = {
    "run_name": str,
    "output_dir": str,
    "seed": int,
    "parallel": {"expert_parallel_size": int},
    "model": {"input_dim": int, "hidden_size": int, "ffn_hidden_size": int, "output_dim": int, "num_experts": int,
              "aux_loss_coef": float, "init_checkpoint": str},
    "data": {"path": str, "global_batch_size": int},
    "train": {"steps": int, "lr": float, "weight_decay": float, "log_interval": int},
    "deepspeed": {"zero_stage": int},
}


class SettingsError(ValueError):
    """A config file or override the schema does not allow."""


def _as(kind: type, value: Any, where: str) -> Any:
    """``value`` as ``kind``: numbers and text convert where nothing is lost; bools never do."""
    converted: Any = None
    if value is not None and not isinstance(value, bool | dict | list):
        with contextlib.suppress(TypeError, ValueError):
            converted = kind(value)
    if converted is None or (kind is int and float(converted) != float(value)):
        raise SettingsError(f"{where} must be of type {kind.__name__}, not {value!r}")
    return converted


def _checked(schema: dict[str, Any], tree: Any, prefix: str = "") -> dict[str, Any]:
    if not isinstance(tree, dict):
        raise SettingsError(f"{prefix.rstrip('.') or 'the config'} must be a section of settings")
    unknown = sorted(set(tree) - set(schema))
    if unknown:
        raise SettingsError(f"{prefix}{unknown[0]} is not a setting (see SCHEMA in moetrain/config.py)")
    out: dict[str, Any] = {}
    for name, kind in schema.items():
        where = prefix + name
        if name not in tree:
            raise SettingsError(f"the config does not set {where}")
        out[name] = _checked(kind, tree[name], where + ".") if isinstance(kind, dict) else _as(kind, tree[name], where)
    return out


class Settings:
    """One run's checked settings, read by dotted name."""

    def __init__(self, tree: dict[str, Any]) -> None:
        self.tree = tree

    def __getitem__(self, dotted: str) -> Any:
        try:
            return functools.reduce(operator.getitem, dotted.split("."), self.tree)
        except (KeyError, TypeError):
            raise KeyError(f"{dotted!r} is not a setting") from None


def read(path: str | Path, overrides: Iterable[str] = ()) -> Settings:
    """The settings of ``path`` with ``key=value`` overrides applied left to right."""
    tree = yaml.safe_load(Path(path).read_text(encoding="utf-8")) or {}
    for word in overrides:
        dotted, equals, text = word.partition("=")
        *sections, leaf = dotted.split(".")
        node = tree
        for section in sections if equals else ():
            node = node.setdefault(section, {}) if isinstance(node, dict) else node
        if not equals or not isinstance(node, dict):
            raise SettingsError(f"override {word!r} is not section.key=value for a setting")
        node[leaf] = yaml.safe_load(text)
    return Settings(_checked(SCHEMA, tree))


if __name__ == "__main__":
    if len(sys.argv) < 3:
        raise SystemExit("usage: python -m moetrain.config CONFIG KEY [key=value ...]")
    print(read(sys.argv[1], sys.argv[3:])[sys.argv[2]])
