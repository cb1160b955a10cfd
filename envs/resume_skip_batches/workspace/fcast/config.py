"""Settings of a run: a YAML file, flattened to ``section.key`` names, then edited from the command line.

A command-line edit is ``section.key=value`` (the value read as YAML: ``12``, ``0.05``, ``null``,
a path). Only names the file already has can be edited: a misspelt one stops the run instead of
training with a setting nobody reads.

``python -m fcast.config CONFIG NAME [section.key=value ...]`` prints one resolved setting; the
launch script asks it for ``launch.nproc``.
"""
from __future__ import annotations

import sys
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import yaml


def flatten(tree: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """``{"train": {"lr": 0.05}}`` -> ``{"train.lr": 0.05}`` (sections become dotted prefixes)."""
    flat: dict[str, Any] = {}
    for name, value in tree.items():
        if isinstance(value, Mapping):
            flat.update(flatten(value, f"{prefix}{name}."))
        else:
            flat[f"{prefix}{name}"] = value
    return flat


def nest(flat: Mapping[str, Any]) -> dict[str, Any]:
    """The inverse of :func:`flatten`."""
    tree: dict[str, Any] = {}
    for dotted, value in flat.items():
        *sections, name = dotted.split(".")
        node = tree
        for section in sections:
            node = node.setdefault(section, {})
        node[name] = value
    return tree


def load_config(path: str | Path, overrides: Iterable[str] = ()) -> dict[str, Any]:
    """The settings of ``path`` with the command-line edits applied, as nested sections."""
    settings = flatten(yaml.safe_load(Path(path).read_text(encoding="utf-8")) or {})
    for edit in overrides:
        name, equals, text = edit.partition("=")
        if not equals:
            raise ValueError(f"{edit!r}: expected section.key=value")
        if name not in settings:
            raise KeyError(f"{name!r} is not a setting of {path} (settings: {', '.join(sorted(settings))})")
        settings[name] = yaml.safe_load(text)
    return nest(settings)


if __name__ == "__main__":
    if len(sys.argv) < 3:
        sys.exit("usage: python -m fcast.config CONFIG NAME [section.key=value ...]")
    print(flatten(load_config(sys.argv[1], sys.argv[3:]))[sys.argv[2]])
